//! The results of `peregrine perf`: latency percentiles and the table.

use peregrine_sim::metrics::{quantile, QuantileMethod::RoundedIndex};
use serde_json::{json, Value};

pub(super) fn latency_json(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
    json!({
        // The rounded-index rule; 0 when there is no sample.
        "p50": quantile(samples, 0.5, RoundedIndex).unwrap_or(0.0),
        "p99": quantile(samples, 0.99, RoundedIndex).unwrap_or(0.0),
        "mean": mean,
        "count": samples.len(),
    })
}

/// The human-readable result.
pub(super) fn table(v: &Value) -> String {
    let mut s = String::new();
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    s += &format!(
        "mode {}  cc {}  scheduler {}\n",
        v["mode"].as_str().unwrap_or("?"),
        v["cc"].as_str().unwrap_or("?"),
        v["scheduler"].as_str().unwrap_or("?")
    );
    s += &format!(
        "security {}\n",
        v["security"]["description"].as_str().unwrap_or("?")
    );
    if let Some(aead) = v["security"]["aead"].as_str() {
        s += &format!(
            "aead {aead} (preference {}, AES hardware {})\n",
            v["security"]["aead_preference"].as_str().unwrap_or("?"),
            if v["security"]["aes_hardware"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            }
        );
    }
    s += &format!(
        "throughput {:.1} Mbit/s   bytes {}   duration {:.2} s   retransmitted packets {}\n",
        f(&v["throughput_bps"]) / 1e6,
        v["bytes"],
        f(&v["duration_s"]),
        v["retransmitted_packets"]
    );
    // iperf3's closing lines: each direction's sender and receiver sums.
    for (key, what) in [
        ("sum_sent", "sender"),
        ("sum_received", "receiver"),
        ("sum_sent_bidir_reverse", "sender (server → client)"),
        ("sum_received_bidir_reverse", "receiver (server → client)"),
    ] {
        let e = &v["end"][key];
        if e.is_object() {
            s += &format!(
                "{what}: {} bytes in {:.2} s, {:.1} Mbit/s\n",
                e["bytes"],
                f(&e["seconds"]),
                f(&e["bits_per_second"]) / 1e6
            );
        }
    }
    if let Some(list) = v["streams"].as_array() {
        let timed = list.iter().any(|st| !st["latency_ms"].is_null());
        if timed {
            s += "stream        bytes     p50 ms     p99 ms    mean ms   count\n";
        } else if !list.is_empty() {
            s += "stream        bytes\n";
        }
        for st in list {
            let l = &st["latency_ms"];
            if l.is_null() {
                s += &format!(
                    "{:>6} {:>12}\n",
                    st["id"].to_string(),
                    st["bytes"].to_string()
                );
            } else {
                s += &format!(
                    "{:>6} {:>12} {:>10.3} {:>10.3} {:>10.3} {:>7}\n",
                    st["id"].to_string(),
                    st["bytes"].to_string(),
                    f(&l["p50"]),
                    f(&l["p99"]),
                    f(&l["mean"]),
                    l["count"].to_string()
                );
            }
        }
        let mut legend = vec![
            (
                "stream",
                "stream id (16 and up: bulk; 2: the latency trace's messages)",
            ),
            ("bytes", "payload bytes that stream carried"),
        ];
        if timed {
            legend.push((
                "p50, p99, mean ms",
                "message latency, the client's send → its echo back (a round trip)",
            ));
            legend.push(("count", "messages timed"));
        }
        if !list.is_empty() {
            s += &peregrine_lab::report::legend(&legend);
        }
    }
    if let Some(e) = v.get("echo") {
        s += &format!(
            "echo {} bytes × {}: median {:.3} ms\n",
            e["size_bytes"],
            e["times_ms"].as_array().map_or(0, Vec::len),
            f(&e["median_ms"])
        );
    }
    match &v["probe"] {
        Value::Null => s += "probe: none\n",
        p => {
            s += &format!(
                "probe: rtt {:.3} ms  bandwidth {:.1} Mbit/s  burst {} bytes  {} ({})\n",
                f(&p["rtt_ms"]),
                f(&p["bandwidth_bps"]) / 1e6,
                p["burst_bytes"],
                p["decision"].as_str().unwrap_or("?"),
                p["reason"].as_str().unwrap_or("?")
            )
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let j = latency_json(&mut v);
        assert_eq!(j["p50"], 51.0);
        assert_eq!(j["p99"], 99.0);
        assert_eq!(j["mean"], 50.5);
        assert_eq!(j["count"], 100);
    }
}
