//! End to end: a seed-004-like street scene drives the mmWave channel,
//! its outages feed hint sources of each mode.

use peregrine_sim::world::channel::hints::{HintMode, HintSource};
use peregrine_sim::world::channel::mmwave::{
    FailureEvent, FailureKind, MmWaveChannel, MmWaveConfig,
};
use peregrine_sim::world::channel::obstacles::{ObstacleField, Rect};
use peregrine_sim::world::geom::{Bounds, Vec3};
use peregrine_sim::Time;
use std::time::Duration;

/// 20 vehicles bouncing inside 100 m × 100 m at 5–30 m/s, 5 stations,
/// 5 ms steps for 10 s; all outages in order.
fn scene(cfg: MmWaveConfig, seed: u64) -> Vec<FailureEvent> {
    let area = Bounds::from_size(100.0, 100.0, 40.0);
    let sites = [
        (10.0, 10.0),
        (90.0, 10.0),
        (10.0, 90.0),
        (90.0, 90.0),
        (50.0, 50.0),
    ];
    let keep: Vec<Rect> = sites
        .iter()
        .map(|(x, y)| Rect::around(*x, *y, 4.0))
        .collect();
    let field = ObstacleField::generate(&cfg.density, area, &keep, seed).unwrap();
    let bss = sites.iter().map(|(x, y)| Vec3::new(*x, *y, 0.0)).collect();
    let mut ch = MmWaveChannel::new(cfg, bss, field, seed).unwrap();
    let mut state: Vec<(Vec3, Vec3)> = (0..20)
        .map(|i| {
            let a = 0.7 * i as f64;
            let speed = 5.0 + 25.0 * (i as f64 / 19.0);
            (
                Vec3::new(5.0 + 4.5 * i as f64, 95.0 - 4.5 * i as f64, 0.0),
                Vec3::new(a.cos(), a.sin(), 0.0).scale(speed),
            )
        })
        .collect();
    let mut events = Vec::new();
    let dt = 0.005;
    for k in 0..2000u64 {
        for (p, v) in state.iter_mut() {
            *p = *p + v.scale(dt);
            if !(0.0..=100.0).contains(&p.x) {
                v.x = -v.x;
                p.x = p.x.clamp(0.0, 100.0);
            }
            if !(0.0..=100.0).contains(&p.y) {
                v.y = -v.y;
                p.y = p.y.clamp(0.0, 100.0);
            }
        }
        ch.step(Time::from_micros(k * 5000), &state);
        events.extend(ch.drain_events());
        for i in 0..20 {
            let l = ch.link(i);
            assert_eq!(l.up, l.event.is_none() && l.capacity_bps > 0);
        }
    }
    events
}

#[test]
fn every_outage_becomes_one_perfect_hint_and_none_when_absent() {
    let events = scene(MmWaveConfig::urban(), 1);
    assert!(events.len() > 20, "only {} outages", events.len());
    let delay = Duration::from_millis(1);
    let mut perfect = HintSource::new(HintMode::Perfect, delay, 1).unwrap();
    let hints = perfect.on_events(&events);
    assert_eq!(hints.len(), events.len());
    for (h, e) in hints.iter().zip(&events) {
        assert_eq!(h.deliver_at, e.time + delay);
        assert_eq!(h.hint.predicted_duration, Some(e.duration));
        assert_eq!(h.vehicle, e.vehicle);
    }
    let mut absent = HintSource::new(HintMode::Absent, delay, 1).unwrap();
    assert!(absent.on_events(&events).is_empty());
    let mut noisy = HintSource::new(HintMode::noisy_default(), delay, 1).unwrap();
    let n = noisy.on_events(&events).len();
    assert!(n < events.len() && n > events.len() / 2);
}

#[test]
fn the_city_has_more_blockages_than_the_country() {
    let (mut urban, mut rural) = (0, 0);
    for seed in 1..=2 {
        let count = |ev: &[FailureEvent]| {
            ev.iter()
                .filter(|e| e.kind == FailureKind::Blockage)
                .count()
        };
        urban += count(&scene(MmWaveConfig::urban(), seed));
        rural += count(&scene(MmWaveConfig::rural(), seed));
    }
    assert!(urban > rural, "urban {urban} rural {rural}");
}
