//! The charts of one `peregrine sim` run (issue 27), written beside its
//! CSVs in `DIR/plots/`: throughput, cwnd and smoothed RTT over time per
//! flow, and the CDF of message latency per stream. `--no-plots` skips
//! them.
//!
//! Group members (`[[flow_groups]]`, possibly thousands) are left out: a
//! chart with a thousand lines says nothing, and the group digest in the
//! table covers them. At most [`MAX_SERIES`] flows or streams are drawn
//! per chart; the title says when more exist, so the legend always
//! covers every line drawn.

use crate::charts::{self, ChartError, ChartText, Samples, Series};
use peregrine_sim::SimResults;
use std::path::{Path, PathBuf};

/// Most lines on one chart (the palette has eight colours).
pub const MAX_SERIES: usize = 8;

/// Write the four charts of `results` into `dir` (created if needed) and
/// return their paths. Cost: O(samples + messages · log messages).
pub fn write_run_plots(results: &SimResults, dir: &Path) -> Result<Vec<PathBuf>, ChartError> {
    std::fs::create_dir_all(dir).map_err(|e| ChartError::Draw {
        file: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let member = |i: usize| results.groups.iter().any(|g| g.flows.contains(&i));
    let flows: Vec<_> = results
        .flows
        .iter()
        .enumerate()
        .filter(|(i, _)| !member(*i))
        .map(|(_, f)| f)
        .collect();
    let shown = &flows[..flows.len().min(MAX_SERIES)];
    let more = |total: usize, what: &str| {
        if total > MAX_SERIES {
            format!(" (first {MAX_SERIES} of {total} {what})")
        } else {
            String::new()
        }
    };
    let interval_s = (results.interval_ns.max(1)) as f64 / 1e9;
    let per_flow = |value: &dyn Fn(&peregrine_sim::metrics::FlowSample) -> Option<f64>| {
        shown
            .iter()
            .map(|f| {
                Series::new(
                    f.name.clone(),
                    f.metrics
                        .samples
                        .iter()
                        .filter_map(|s| value(s).map(|v| (s.time_ns as f64 / 1e9, v)))
                        .collect(),
                )
            })
            .collect::<Vec<_>>()
    };
    let name = &results.name;
    let mut written = Vec::new();
    let flows_more = more(flows.len(), "flows");
    let file = dir.join("throughput.svg");
    charts::time_series(
        &file,
        &ChartText::new(
            format!("{name}: throughput per flow{flows_more}"),
            "time (s)",
            "throughput (Mbit/s)",
        ),
        &per_flow(&|s| Some(s.delta.rx_bytes as f64 * 8.0 / interval_s / 1e6)),
    )?;
    written.push(file);
    let file = dir.join("cwnd.svg");
    charts::time_series(
        &file,
        &ChartText::new(
            format!("{name}: congestion window per flow{flows_more}"),
            "time (s)",
            "cwnd (KiB)",
        ),
        &per_flow(&|s| Some(s.cwnd_bytes as f64 / 1024.0)),
    )?;
    written.push(file);
    let file = dir.join("rtt.svg");
    charts::time_series(
        &file,
        &ChartText::new(
            format!("{name}: smoothed RTT per flow{flows_more}"),
            "time (s)",
            "smoothed RTT (ms)",
        ),
        &per_flow(&|s| s.srtt_ns.map(|ns| ns as f64 / 1e6)),
    )?;
    written.push(file);
    let streams: Vec<Samples> = flows
        .iter()
        .flat_map(|f| {
            f.metrics.streams.iter().map(move |st| {
                Samples::new(
                    format!("{} stream {} ({})", f.name, st.id, st.app),
                    st.latencies_ns.iter().map(|ns| *ns as f64 / 1e6).collect(),
                )
            })
        })
        .filter(|s| !s.values.is_empty())
        .collect();
    let file = dir.join("latency_cdf.svg");
    let text = ChartText::new(
        format!(
            "{name}: message latency per stream{}",
            more(streams.len(), "streams")
        ),
        "message latency (ms)",
        "fraction of messages",
    );
    if streams.is_empty() {
        charts::no_data(&file, &text, "no message was delivered")?;
    } else {
        charts::cdf(&file, &text, &streams[..streams.len().min(MAX_SERIES)])?;
    }
    written.push(file);
    Ok(written)
}
