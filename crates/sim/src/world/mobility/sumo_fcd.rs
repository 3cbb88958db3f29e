//! SUMO floating-car data: `mobility = { model = "trace", format =
//! "sumo-fcd", file = "run.fcd.xml" }` replays a vehicle of SUMO's
//! `--fcd-output` directly, with no conversion step.
//!
//! The file is SUMO's FCD XML (schema `fcd_file.xsd`):
//!
//! ```xml
//! <fcd-export>
//!   <timestep time="0.00">
//!     <vehicle id="veh0" x="8.30" y="-1.60" angle="90.00" speed="13.90" .../>
//!   </timestep>
//! </fcd-export>
//! ```
//!
//! Positions are SUMO's Cartesian network coordinates in metres (`x`, `y`,
//! and `z` when the network has elevation, else 0); `--fcd-output.geo`
//! (longitude/latitude) is not supported. Which vehicle a node replays:
//! `vehicle = "veh0"` names it; without it node *i* replays the *i*-th
//! distinct vehicle id in order of first appearance in the file (node 0
//! the first vehicle to depart). Persons, containers and every other
//! element are skipped. Between timesteps the position is interpolated
//! linearly, before the vehicle departs it holds its first position and
//! after it arrives its last one, as for the CSV traces.
//!
//! The file is **streamed** with `quick-xml`'s pull reader: memory is
//! O(samples of the one vehicle replayed + distinct ids seen before it),
//! never the whole file, so a city-scale FCD of gigabytes replays one node
//! in constant extra memory. Cost: one pass over the file per node built.

use super::trace::TraceMobility;
use super::MobilityError;
use crate::world::geom::Vec3;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::collections::BTreeSet;
use std::io::BufRead;

/// Which vehicle of the file a node replays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VehicleChoice {
    /// The vehicle with this `id`.
    Id(String),
    /// The n-th distinct vehicle id (0-based) in order of first appearance.
    Nth(usize),
}

/// Read the samples of one vehicle from the FCD file at `path`.
/// O(file size) time, O(that vehicle's samples) memory.
pub fn load(path: &str, choice: &VehicleChoice) -> Result<TraceMobility, MobilityError> {
    let file = std::fs::File::open(path).map_err(|e| MobilityError::TraceIo {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    read(std::io::BufReader::new(file), path, choice)
}

/// [`load`] from any reader; `name` is used in error messages.
pub fn read<R: BufRead>(
    input: R,
    name: &str,
    choice: &VehicleChoice,
) -> Result<TraceMobility, MobilityError> {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    let err = |offset: u64, message: String| MobilityError::TraceXml {
        path: name.to_string(),
        offset,
        message,
    };
    let mut root_seen = false;
    let mut time_s: Option<f64> = None;
    // Distinct ids in order of appearance, only while looking for the n-th.
    let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut target: Option<Vec<u8>> = match choice {
        VehicleChoice::Id(id) => Some(id.as_bytes().to_vec()),
        VehicleChoice::Nth(_) => None,
    };
    let mut samples: Vec<(f64, Vec3)> = Vec::new();
    loop {
        let offset = reader.buffer_position();
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| err(offset, format!("not well-formed XML: {e}")))?;
        match event {
            Event::Start(e) | Event::Empty(e) => {
                let tag = e.name();
                if !root_seen {
                    if tag.as_ref() != b"fcd-export" {
                        return Err(err(
                            offset,
                            format!(
                                "the root element is <{}>, not SUMO's <fcd-export> (write it with `sumo --fcd-output FILE`)",
                                String::from_utf8_lossy(tag.as_ref())
                            ),
                        ));
                    }
                    root_seen = true;
                    continue;
                }
                match tag.as_ref() {
                    b"timestep" => {
                        let t = number(&e, b"time", offset, &err)?.ok_or_else(|| {
                            err(offset, "a <timestep> without a time attribute".into())
                        })?;
                        if t < 0.0 {
                            return Err(err(offset, format!("timestep time {t} is negative")));
                        }
                        if let Some(prev) = time_s.filter(|p| t < *p) {
                            return Err(err(
                                offset,
                                format!("timestep time {t} goes back in time (previous {prev})"),
                            ));
                        }
                        time_s = Some(t);
                    }
                    b"vehicle" => {
                        let id = attr(&e, b"id", offset, &err)?
                            .ok_or_else(|| err(offset, "a <vehicle> without an id".into()))?;
                        if target.is_none() {
                            if let VehicleChoice::Nth(n) = choice {
                                if !seen.contains(&id) {
                                    if seen.len() == *n {
                                        target = Some(id.clone());
                                    } else {
                                        seen.insert(id.clone());
                                    }
                                }
                            }
                        }
                        if target.as_deref() != Some(id.as_slice()) {
                            continue;
                        }
                        let t = time_s.ok_or_else(|| {
                            err(offset, "a <vehicle> outside any <timestep>".into())
                        })?;
                        let coord = |key: &[u8]| -> Result<Option<f64>, MobilityError> {
                            number(&e, key, offset, &err)
                        };
                        let x = coord(b"x")?
                            .ok_or_else(|| err(offset, "a <vehicle> without x".into()))?;
                        let y = coord(b"y")?
                            .ok_or_else(|| err(offset, "a <vehicle> without y".into()))?;
                        let z = coord(b"z")?.unwrap_or(0.0);
                        samples.push((t, Vec3::new(x, y, z)));
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !root_seen {
        return Err(err(
            0,
            "no <fcd-export> element: is this SUMO FCD output?".into(),
        ));
    }
    if samples.is_empty() {
        return Err(MobilityError::TraceVehicleMissing {
            path: name.to_string(),
            vehicle: match choice {
                VehicleChoice::Id(id) => format!("id {id:?}"),
                VehicleChoice::Nth(n) => format!(
                    "number {n} (0-based; the file has {} distinct vehicle ids)",
                    seen.len()
                ),
            },
        });
    }
    Ok(TraceMobility::from_samples(samples))
}

/// The unescaped value of attribute `key`, if present.
fn attr(
    e: &BytesStart<'_>,
    key: &[u8],
    offset: u64,
    err: &impl Fn(u64, String) -> MobilityError,
) -> Result<Option<Vec<u8>>, MobilityError> {
    for a in e.attributes() {
        let a = a.map_err(|x| err(offset, format!("bad attribute: {x}")))?;
        if a.key.as_ref() == key {
            let v = a
                .unescape_value()
                .map_err(|x| err(offset, format!("bad attribute value: {x}")))?;
            return Ok(Some(v.as_bytes().to_vec()));
        }
    }
    Ok(None)
}

/// Attribute `key` as a finite number, if present.
fn number(
    e: &BytesStart<'_>,
    key: &[u8],
    offset: u64,
    err: &impl Fn(u64, String) -> MobilityError,
) -> Result<Option<f64>, MobilityError> {
    let Some(raw) = attr(e, key, offset, err)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&raw);
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(err(
            offset,
            format!(
                "attribute {}=\"{text}\" is not a finite number",
                String::from_utf8_lossy(key)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::mobility::Mobility;
    use peregrine_cc::Time;

    const FCD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- <configuration> inside a comment is skipped -->
<fcd-export>
    <timestep time="0.00">
        <vehicle id="b" x="0.00" y="0.00" angle="90.00" speed="10.00"/>
    </timestep>
    <timestep time="1.00">
        <vehicle id="b" x="10.00" y="0.00" speed="10.00"/>
        <person id="p0" x="3.00" y="3.00"/>
        <vehicle id="a&amp;c" x="5.00" y="5.00" z="2.00"/>
    </timestep>
    <timestep time="3.00">
        <vehicle id="b" x="10.00" y="20.00"/>
    </timestep>
</fcd-export>
"#;

    fn at(m: &mut TraceMobility, s: f64) -> Vec3 {
        m.position(Time::from_secs_f64(s))
    }

    #[test]
    fn replays_a_vehicle_by_id_or_by_order_of_appearance() {
        let r = |c| read(FCD.as_bytes(), "t.xml", &c);
        let mut b = r(VehicleChoice::Id("b".into())).expect("b");
        assert_eq!(at(&mut b, 0.5), Vec3::new(5.0, 0.0, 0.0));
        assert_eq!(at(&mut b, 2.0), Vec3::new(10.0, 10.0, 0.0));
        assert_eq!(at(&mut b, 9.0), Vec3::new(10.0, 20.0, 0.0));
        let mut first = r(VehicleChoice::Nth(0)).expect("node 0");
        assert_eq!(at(&mut first, 0.5), Vec3::new(5.0, 0.0, 0.0));
        let mut second = r(VehicleChoice::Nth(1)).expect("node 1");
        assert_eq!(at(&mut second, 0.0), Vec3::new(5.0, 5.0, 2.0));
        let mut named = r(VehicleChoice::Id("a&c".into())).expect("escaped id");
        assert_eq!(at(&mut named, 7.0), Vec3::new(5.0, 5.0, 2.0));
    }

    #[test]
    fn bad_files_are_named() {
        let r = |text: &str, c| {
            read(text.as_bytes(), "t.xml", &c)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            r(FCD, VehicleChoice::Nth(2)).as_deref(),
            Some("mobility trace `t.xml` has no samples for vehicle number 2 (0-based; the file has 2 distinct vehicle ids)")
        );
        assert_eq!(
            r(FCD, VehicleChoice::Id("zz".into())).as_deref(),
            Some("mobility trace `t.xml` has no samples for vehicle id \"zz\"")
        );
        let not_fcd = r("<routes/>", VehicleChoice::Nth(0)).expect("error");
        assert!(
            not_fcd.contains("the root element is <routes>"),
            "{not_fcd}"
        );
        let bad_x = r(
            "<fcd-export><timestep time=\"0\"><vehicle id=\"v\" x=\"east\" y=\"0\"/></timestep></fcd-export>",
            VehicleChoice::Nth(0),
        )
        .expect("error");
        assert!(
            bad_x.contains("attribute x=\"east\" is not a finite number"),
            "{bad_x}"
        );
        let back = r(
            "<fcd-export><timestep time=\"2\"/><timestep time=\"1\"/></fcd-export>",
            VehicleChoice::Nth(0),
        )
        .expect("error");
        assert!(
            back.contains("timestep time 1 goes back in time (previous 2)"),
            "{back}"
        );
        let broken = r("<fcd-export><timestep time=\"0\">", VehicleChoice::Nth(0));
        assert!(broken.is_some());
    }
}
