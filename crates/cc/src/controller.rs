//! The trait every congestion controller implements (cc-spec §2.4).

use crate::types::{
    AckSample, CcStats, CongestionEvent, CongestionResponse, EcnResponse, EcnSample, LinkHint,
    PathInfo, SendGate, StartupMeasurement,
};
use crate::Time;
use std::time::Duration;

/// A congestion controller, driven by a connection.
///
/// # Call contract
///
/// * [`init`](Self::init) once, when the connection becomes established,
///   before any other call. [`set_initial_window`](Self::set_initial_window)
///   may follow it, before the first data is sent.
/// * Per ACK, after the connection updated its RTT estimator, scoreboard and
///   delivery-rate sampler: [`on_ack`](Self::on_ack).
/// * Once per congestion episode: [`on_congestion_event`](Self::on_congestion_event)
///   when loss recovery starts or an ECN echo starts a CWR episode;
///   [`on_recovery_exit`](Self::on_recovery_exit) when the cumulative ACK
///   reaches the episode's recovery point.
/// * [`on_rto`](Self::on_rto) when the retransmission timer fires, after the
///   connection marked the outstanding packets lost.
/// * `now` in every [`PathInfo`] never goes backwards.
///
/// No method panics for any sequence of calls or any values; the window
/// always stays within `[1 segment, clamp]`.
pub trait CongestionController: Send {
    /// The registry name (`"cubic"`, `"rtwtcp"`, …).
    fn name(&self) -> &'static str;
    /// Start the controller: `cwnd = IW` (10 segments), `ssthresh = ∞`, then
    /// the algorithm's own initialisation.
    fn init(&mut self, path: &PathInfo);
    /// Start from a measured window (packet-pair start-up) instead of the
    /// initial window. The default meaning: `cwnd = ceil(window_bytes / mss)`
    /// (at least 2 segments) and `ssthresh = cwnd`, i.e. congestion avoidance
    /// from the measured pipe size; each algorithm documents its own.
    fn set_initial_window(&mut self, window_bytes: u64, path: &PathInfo);
    /// The packet-pair start-up measured the path while the initial window
    /// was in flight: leave start-up with the state the measurement
    /// implies. May come at any time after [`init`](Self::init) (data
    /// flows before it). The default: [`set_initial_window`](Self::set_initial_window)
    /// with `max(measured window, cwnd)` — the window never shrinks for a
    /// measurement. CUBIC also takes the measured window as `W_max`, BBR
    /// the measured bandwidth as its first bandwidth sample. O(1).
    fn on_startup_measurement(&mut self, m: &StartupMeasurement, path: &PathInfo) {
        let window = m.window_bytes.max(self.cwnd_bytes());
        self.set_initial_window(window, path);
    }
    /// A packet of `bytes` bytes was sent (PRR counts it as `prr_out`).
    fn on_packet_sent(&mut self, path: &PathInfo, bytes: u32);
    /// An ACK was processed (cc-spec §2.3 steps 2 and 4).
    fn on_ack(&mut self, ack: &AckSample, path: &PathInfo);
    /// A congestion episode starts. Returns `Hold` only for RTW-TCP.
    fn on_congestion_event(
        &mut self,
        event: &CongestionEvent,
        path: &PathInfo,
    ) -> CongestionResponse;
    /// The cumulative ACK reached the episode's recovery point (Recovery/Cwr → Open).
    fn on_recovery_exit(&mut self, path: &PathInfo);
    /// The retransmission timer fired (any state → Loss). Returns `Hold` only for RTW-TCP.
    fn on_rto(&mut self, path: &PathInfo) -> CongestionResponse;
    /// The last congestion episode was proven spurious: undo it.
    fn on_spurious_congestion(&mut self, path: &PathInfo);
    /// First transmission after the connection was idle (nothing in flight)
    /// for at least one RTO.
    fn on_idle_restart(&mut self, path: &PathInfo, idle: Duration);
    /// An asynchronous link-layer report (only RTW-TCP acts on it).
    fn on_link_hint(&mut self, hint: &LinkHint, path: &PathInfo);
    /// Congestion window, bytes.
    fn cwnd_bytes(&self) -> u64;
    /// Slow-start threshold, bytes; `None` while infinite.
    fn ssthresh_bytes(&self) -> Option<u64>;
    /// Pacing rate in bytes per second; `None` = unpaced.
    fn pacing_rate_bytes_per_sec(&self) -> Option<u64>;
    /// `cwnd < ssthresh`.
    fn in_slow_start(&self) -> bool;
    /// Whether the connection may send now (RTW-TCP gates during an outage).
    fn send_gate(&self, now: Time) -> SendGate;
    /// After an RTO answered with `Hold`: when to re-arm the retransmission
    /// timer, if the controller wants a shorter timer than the normal RTO.
    fn held_rto_timeout(&self, now: Time) -> Option<Duration>;
    /// A snapshot for traces and tests.
    fn stats(&self) -> CcStats;
    /// How this controller answers CE marks, hence which ECT codepoint
    /// the connection sets when ECN is on: classic controllers (the
    /// default) ECT(0), scalable ones (Prague) ECT(1). O(1).
    fn ecn_response(&self) -> EcnResponse {
        EcnResponse::Classic
    }
    /// An ACK carried ECN counts that grew: the per-mark information a
    /// scalable controller needs (Prague's α). Called before the ACK's
    /// [`on_ack`](Self::on_ack) and before any CWR episode the marks start.
    /// Classic controllers ignore it (the default): for them a CE echo is
    /// a congestion episode, once per round trip. O(1).
    fn on_ecn(&mut self, _sample: &EcnSample, _path: &PathInfo) {}
    /// The longest burst the connection's pacer may release back to back,
    /// as time at the pacing rate (never less than one packet): `None`
    /// (the default) keeps the pacer's own burst credit (10 packets or
    /// 2 ms at the rate). A scalable controller asks for far less: an L4S
    /// AQM marks every packet queued beyond its ~1 ms step threshold, so a
    /// burst of credit becomes a round of marks that no congestion caused
    /// (RFC 9331 §4.3 asks L4S senders to pace and avoid bursts; Linux
    /// Prague bounds its GSO bursts to ~250 µs at the pacing rate). O(1).
    fn max_pacing_burst(&self) -> Option<Duration> {
        None
    }
}
