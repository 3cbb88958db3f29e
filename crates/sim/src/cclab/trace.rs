//! What a lab run records: trace rows, events and a summary.

use peregrine_cc::Time;
use std::fmt::Write as _;
use std::time::Duration;

/// Something that happened during a lab run (one trace row each).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LabEvent {
    /// A packet was dropped by the script's single loss.
    ScriptedLoss,
    /// A packet was dropped at random.
    RandomLoss,
    /// A packet was dropped by the full bottleneck queue.
    QueueDrop,
    /// The sender declared packets lost and started a congestion episode
    /// answered with a reduction.
    RecoveryStart,
    /// The controller answered a congestion episode with `Hold`.
    Hold,
    /// The episode ended (Recovery/Cwr → Open, or Loss → Open).
    RecoveryExit,
    /// The blockage started and its hint was delivered.
    BlockageStart,
    /// The blockage ended.
    BlockageEnd,
    /// The retransmission timer fired.
    Rto,
    /// The retransmission timer fired and the controller answered `Hold`.
    RtoHold,
    /// The script flushed the path and forced an RTO.
    ScriptedRto,
    /// A probe was sent while the controller gated sending.
    Probe,
}

impl LabEvent {
    /// The name written in the CSV `event` column.
    pub fn as_str(self) -> &'static str {
        match self {
            LabEvent::ScriptedLoss => "scripted_loss",
            LabEvent::RandomLoss => "random_loss",
            LabEvent::QueueDrop => "queue_drop",
            LabEvent::RecoveryStart => "recovery_start",
            LabEvent::Hold => "hold",
            LabEvent::RecoveryExit => "recovery_exit",
            LabEvent::BlockageStart => "blockage_start",
            LabEvent::BlockageEnd => "blockage_end",
            LabEvent::Rto => "rto",
            LabEvent::RtoHold => "rto_hold",
            LabEvent::ScriptedRto => "scripted_rto",
            LabEvent::Probe => "probe",
        }
    }
}

/// One row of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// When.
    pub time: Time,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes (`None` while infinite).
    pub ssthresh_bytes: Option<u64>,
    /// Pacing rate, bits per second (`None` when unpaced).
    pub pacing_rate_bps: Option<u64>,
    /// The event this row records, if any (periodic rows have none).
    pub event: Option<LabEvent>,
    /// Bytes in the bottleneck queue.
    pub queue_bytes: u64,
    /// Packets in flight.
    pub in_flight_pkts: u32,
    /// Latest RTT sample.
    pub latest_rtt: Option<Duration>,
    /// The controller's mode (BBR, RTW-TCP).
    pub mode: Option<&'static str>,
    /// The controller's bandwidth estimate, bytes per second.
    pub bandwidth_estimate_bytes_per_sec: Option<u64>,
}

/// The headline figures of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct LabSummary {
    /// Controller name.
    pub controller: String,
    /// Distinct payload bytes acknowledged.
    pub bytes_delivered: u64,
    /// Time-weighted mean congestion window, bytes.
    pub mean_cwnd_bytes: f64,
    /// Congestion episodes and RTOs answered with a reduction.
    pub reductions: u32,
    /// Episodes and RTOs answered with `Hold`.
    pub holds: u32,
    /// Retransmission-timer expiries (scripted ones included).
    pub rtos: u32,
    /// Packets lost (any cause).
    pub packets_lost: u64,
    /// cwnd just before the blockage started, bytes.
    pub cwnd_before_blockage_bytes: Option<u64>,
    /// cwnd 300 ms after the blockage ended, bytes.
    pub cwnd_after_blockage_bytes: Option<u64>,
    /// Mean of the RTT samples.
    pub mean_rtt: Option<Duration>,
}

impl LabSummary {
    /// `cwnd_after / cwnd_before` around the blockage.
    pub fn blockage_retention(&self) -> Option<f64> {
        match (
            self.cwnd_before_blockage_bytes,
            self.cwnd_after_blockage_bytes,
        ) {
            (Some(b), Some(a)) if b > 0 => Some(a as f64 / b as f64),
            _ => None,
        }
    }
}

/// Everything a lab run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct LabTrace {
    /// Rows in time order: one per sample interval and one per event.
    pub rows: Vec<TraceRow>,
    /// Headline figures.
    pub summary: LabSummary,
}

/// The CSV header (a contract: `peregrine cc trace` writes exactly these columns).
pub const CSV_HEADER: &str = "time_s,cwnd_bytes,ssthresh_bytes,pacing_rate_bps,event";

impl LabTrace {
    /// The trace as CSV: `time_s,cwnd_bytes,ssthresh_bytes,pacing_rate_bps,event`
    /// (ssthresh empty while infinite, pacing empty when unpaced, event empty
    /// on periodic rows).
    pub fn to_csv(&self) -> String {
        let mut out = String::with_capacity(self.rows.len() * 32);
        out.push_str(CSV_HEADER);
        out.push('\n');
        for r in &self.rows {
            // Writing to a String cannot fail.
            let _ = write!(out, "{:.6},{},", r.time.as_secs_f64(), r.cwnd_bytes);
            if let Some(s) = r.ssthresh_bytes {
                let _ = write!(out, "{s}");
            }
            out.push(',');
            if let Some(p) = r.pacing_rate_bps {
                let _ = write!(out, "{p}");
            }
            out.push(',');
            if let Some(e) = r.event {
                out.push_str(e.as_str());
            }
            out.push('\n');
        }
        out
    }

    /// The cwnd in force at time `t` (the last row at or before `t`).
    pub fn cwnd_at(&self, t: Time) -> Option<u64> {
        let idx = self.rows.partition_point(|r| r.time <= t);
        idx.checked_sub(1).map(|i| self.rows[i].cwnd_bytes)
    }
}
