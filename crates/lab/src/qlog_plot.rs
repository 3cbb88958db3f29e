//! `peregrine qlog plot FILE`: the congestion view of one qlog file, as
//! qvis draws it — congestion window and bytes in flight over time, and
//! the RTT estimates over time, with the count of packets lost.
//!
//! Reads the JSON-SEQ files `peregrine-trace` writes (and any qlog 0.3
//! JSON-SEQ file with QUIC's `recovery:metrics_updated` and
//! `recovery:packet_lost` events): a metric missing from an update keeps
//! its previous value, as the qlog schema says.

use crate::charts::{time_series, ChartText, Series};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

/// What one qlog file holds for the congestion view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CongestionView {
    /// The file's title (`title` of its header).
    pub title: String,
    /// (time s, congestion window KiB) at each update.
    pub cwnd_kib: Vec<(f64, f64)>,
    /// (time s, bytes in flight KiB) at each update.
    pub in_flight_kib: Vec<(f64, f64)>,
    /// (time s, smoothed RTT ms) at each update.
    pub smoothed_rtt_ms: Vec<(f64, f64)>,
    /// (time s, minimum RTT ms) at each update.
    pub min_rtt_ms: Vec<(f64, f64)>,
    /// Times (s) of the packets declared lost.
    pub losses_s: Vec<f64>,
}

/// Reads `path`. Errors name the file and the record (1 = the header).
pub fn read(path: &Path) -> anyhow::Result<CongestionView> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut view = CongestionView::default();
    let mut records = text.split('\u{1e}').filter(|r| !r.trim().is_empty());
    let header: serde_json::Value = match records.next() {
        Some(h) => serde_json::from_str(h)
            .with_context(|| format!("{}: record 1 (the header) is not JSON", path.display()))?,
        None => bail!("{}: empty file, not qlog JSON-SEQ", path.display()),
    };
    if header.get("qlog_format").and_then(|f| f.as_str()) != Some("JSON-SEQ") {
        bail!(
            "{}: not a qlog JSON-SEQ file (its header has no \"qlog_format\": \"JSON-SEQ\")",
            path.display()
        );
    }
    view.title = header["title"].as_str().unwrap_or("qlog").to_string();
    let (mut cwnd, mut bif, mut srtt, mut min_rtt) = (None, None, None, None);
    for (i, r) in records.enumerate() {
        let rec: serde_json::Value = serde_json::from_str(r)
            .with_context(|| format!("{}: record {} is not JSON", path.display(), i + 2))?;
        let Some(t_ms) = rec["time"].as_f64() else {
            bail!(
                "{}: record {} has no numeric \"time\"",
                path.display(),
                i + 2
            );
        };
        let t = t_ms / 1e3;
        match rec["name"].as_str() {
            Some("recovery:metrics_updated") => {
                let d = &rec["data"];
                let num = |k: &str| d.get(k).and_then(serde_json::Value::as_f64);
                cwnd = num("congestion_window").or(cwnd);
                bif = num("bytes_in_flight").or(bif);
                srtt = num("smoothed_rtt").or(srtt);
                min_rtt = num("min_rtt").or(min_rtt);
                if let Some(c) = cwnd {
                    view.cwnd_kib.push((t, c / 1024.0));
                }
                if let Some(b) = bif {
                    view.in_flight_kib.push((t, b / 1024.0));
                }
                if let Some(s) = srtt {
                    view.smoothed_rtt_ms.push((t, s));
                }
                if let Some(m) = min_rtt {
                    view.min_rtt_ms.push((t, m));
                }
            }
            Some("recovery:packet_lost") => view.losses_s.push(t),
            _ => {}
        }
    }
    Ok(view)
}

/// Draws `view` into `dir`: `<stem>-window.svg` (cwnd and bytes in
/// flight, KiB, the loss count in the title) and `<stem>-rtt.svg`
/// (smoothed and minimum RTT, ms). Returns the files.
pub fn plot(view: &CongestionView, dir: &Path, stem: &str) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let window = dir.join(format!("{stem}-window.svg"));
    let rtt = dir.join(format!("{stem}-rtt.svg"));
    // The chart helper draws lines; losses go in the title as a count
    // (their times are in `view.losses_s`).
    time_series(
        &window,
        &ChartText::new(
            format!(
                "{}: congestion window and bytes in flight ({} packets lost)",
                view.title,
                view.losses_s.len()
            ),
            "time (s)",
            "KiB",
        ),
        &[
            Series::new("congestion window", view.cwnd_kib.clone()),
            Series::new("bytes in flight", view.in_flight_kib.clone()),
        ],
    )?;
    time_series(
        &rtt,
        &ChartText::new(format!("{}: RTT", view.title), "time (s)", "RTT (ms)"),
        &[
            Series::new("smoothed RTT", view.smoothed_rtt_ms.clone()),
            Series::new("minimum RTT", view.min_rtt_ms.clone()),
        ],
    )?;
    Ok(vec![window, rtt])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` in a fresh `.sqlog` file, removed when the guard is dropped.
    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::Builder::new()
            .prefix("peregrine-qlogplot-")
            .suffix(".sqlog")
            .tempfile()
            .unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn metrics_missing_from_an_update_keep_their_value() {
        let p = file(concat!(
            "\u{1e}{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"f\"}\n",
            "\u{1e}{\"time\":0,\"name\":\"recovery:metrics_updated\",\"data\":{\"congestion_window\":2048,\"bytes_in_flight\":0}}\n",
            "\u{1e}{\"time\":10,\"name\":\"recovery:metrics_updated\",\"data\":{\"bytes_in_flight\":1024,\"smoothed_rtt\":40.5}}\n",
            "\u{1e}{\"time\":20,\"name\":\"recovery:packet_lost\",\"data\":{}}\n",
        ));
        let v = read(p.path()).unwrap();
        assert_eq!(v.title, "f");
        assert_eq!(v.cwnd_kib, [(0.0, 2.0), (0.01, 2.0)]);
        assert_eq!(v.in_flight_kib, [(0.0, 0.0), (0.01, 1.0)]);
        assert_eq!(v.smoothed_rtt_ms, [(0.01, 40.5)]);
        assert_eq!(v.losses_s, [0.02]);
    }

    #[test]
    fn a_file_that_is_not_qlog_is_refused_with_the_record() {
        let p = file("{\"hello\": 1}\n");
        let e = format!("{:#}", read(p.path()).unwrap_err());
        assert!(e.contains("not a qlog JSON-SEQ file"), "{e}");
        let p = file("\u{1e}{\"qlog_format\":\"JSON-SEQ\"}\n\u{1e}{not json\n");
        let e = format!("{:#}", read(p.path()).unwrap_err());
        assert!(e.contains("record 2 is not JSON"), "{e}");
    }
}
