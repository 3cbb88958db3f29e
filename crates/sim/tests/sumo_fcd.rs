//! SUMO floating-car data (issue 27): the committed FCD file, which SUMO
//! 1.15.0 wrote (`scenarios/sumo/make-fcd.sh`), replayed through the
//! mobility model and through a scenario.

use peregrine_sim::world::geom::Vec3;
use peregrine_sim::world::mobility::{MobilityConfig, TraceConfig, TraceFormat};
use peregrine_sim::{Scenario, Time};
use std::path::PathBuf;

fn fcd() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/sumo/grid.fcd.xml")
}

/// `(x, y)` of `vehicle` at the `<timestep time="{time}">` of the file,
/// read with plain string search (independent of the streamed reader).
fn in_file(vehicle: &str, time: &str) -> (f64, f64) {
    let text = std::fs::read_to_string(fcd()).expect("the FCD file is committed");
    let step = text
        .split("<timestep ")
        .find(|s| s.starts_with(&format!("time=\"{time}\"")))
        .expect("the timestep is in the file");
    let line = step
        .lines()
        .find(|l| l.contains(&format!("<vehicle id=\"{vehicle}\"")))
        .expect("the vehicle is in the timestep");
    let attr = |k: &str| -> f64 {
        let start = line.find(&format!(" {k}=\"")).expect("attribute") + k.len() + 3;
        let end = start + line[start..].find('"').expect("closing quote");
        line[start..end].parse().expect("a number")
    };
    (attr("x"), attr("y"))
}

fn model(vehicle: Option<&str>, node: usize) -> Box<dyn peregrine_sim::world::mobility::Mobility> {
    MobilityConfig::Trace(TraceConfig {
        path: fcd().to_string_lossy().into_owned(),
        format: TraceFormat::SumoFcd,
        vehicle: vehicle.map(str::to_string),
        ..TraceConfig::default()
    })
    .build(
        node,
        peregrine_sim::world::geom::Bounds::from_size(400.0, 400.0, 10.0),
        1,
    )
    .expect("the FCD trace builds")
}

fn close(p: Vec3, (x, y): (f64, f64)) -> bool {
    (p.x - x).abs() < 1e-9 && (p.y - y).abs() < 1e-9 && p.z == 0.0
}

#[test]
fn positions_at_three_times_are_the_files() {
    let mut veh0 = model(Some("veh0"), 7);
    for (t, step) in [(1.0, "1.00"), (15.0, "15.00"), (26.0, "26.00")] {
        let p = veh0.position(Time::from_secs_f64(t));
        assert!(close(p, in_file("veh0", step)), "veh0 at {t} s: {p:?}");
    }
    // Hard-coded too, as SUMO printed them, so the helper cannot fool us.
    assert!(close(
        veh0.position(Time::from_secs_f64(26.0)),
        (369.70, -1.60)
    ));
    // Node 1 without `vehicle` is the second vehicle to appear: veh1, which
    // departs at 2 s; between timesteps the position is interpolated.
    let mut second = model(None, 1);
    assert!(close(
        second.position(Time::from_secs_f64(0.0)),
        in_file("veh1", "2.00")
    ));
    let (a, b) = (in_file("veh1", "10.00"), in_file("veh1", "11.00"));
    let mid = second.position(Time::from_secs_f64(10.5));
    assert!(
        close(mid, ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0)),
        "{mid:?}"
    );
    assert!(close(
        second.position(Time::from_secs_f64(25.0)),
        (85.80, 198.40)
    ));
}

#[test]
fn the_two_cars_scenario_runs_over_the_fcd_file() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/sumo/two-cars.toml");
    let s = Scenario::from_file(&path, &["duration=\"10s\"".to_string()])
        .expect("the SUMO scenario parses");
    let r = peregrine_sim::run(&s).expect("it runs");
    assert_eq!(r.flows.len(), 1);
    assert!(r.events > 0);
}

#[test]
fn a_missing_vehicle_is_an_error_naming_it() {
    let e = MobilityConfig::Trace(TraceConfig {
        path: fcd().to_string_lossy().into_owned(),
        format: TraceFormat::SumoFcd,
        vehicle: Some("bus7".into()),
        ..TraceConfig::default()
    })
    .build(
        0,
        peregrine_sim::world::geom::Bounds::from_size(1.0, 1.0, 1.0),
        1,
    )
    .err()
    .expect("no such vehicle");
    assert!(
        e.to_string()
            .ends_with("has no samples for vehicle id \"bus7\""),
        "{e}"
    );
}
