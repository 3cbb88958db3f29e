//! Recovery glue: where the connection meets `crate::recovery` (RTT,
//! loss detection, the congestion controller) and `crate::probe` (the
//! packet-pair start-up). What an ACK or NACK acknowledged or declared
//! lost goes back to the sender's blocks here; the controller is built
//! from the configuration and replaced at run time here; the data sender's
//! ACK-frequency requests ([`ack_frequency`]) follow its window here.
//!
//! The transmit and receive paths call into this module; it holds no
//! state of its own beyond the ACK-frequency policy.

pub(crate) mod ack_frequency;

use crate::connection::{Connection, ConnectionConfig, ConnectionState};
use crate::probe::ProbeOutcome;
use crate::recovery::{Recovery, RecoveryConfig, RecoveryOutcome};
use crate::wire::StartupMode;
use peregrine_cc::{CcConfig, Time};
use std::time::Duration;

pub(in crate::connection) fn recovery_config(
    config: &ConnectionConfig,
    packet_size: u16,
) -> RecoveryConfig {
    RecoveryConfig {
        mss: u32::from(packet_size),
        initial_rto: config.initial_rto,
        min_rto: config.min_rto,
        max_rto: config.max_rto,
        packet_threshold: config.packet_threshold,
        // The peer holds ACKs back as long as its policy allows (both
        // ends share the policy): TCP's delayed ACK may exceed max_ack_delay.
        max_ack_delay: config.effective_max_ack_delay(),
        fine_pacing: config.pacing == crate::connection::Pacing::Fine,
        ecn: config.ecn,
    }
}

/// A fresh [`Recovery`] for packets of `packet_size` bytes: the
/// configuration's timers, a new controller and the queue guard it asks
/// for. The one place a connection's recovery is built, so a size agreed
/// in the handshake (path MTU discovery's 1,200-byte base) cannot rebuild
/// it without the guard. O(1).
pub(in crate::connection) fn new_recovery(config: &ConnectionConfig, packet_size: u16) -> Recovery {
    let mut recovery = Recovery::new(recovery_config(config, packet_size), config.cc.build());
    recovery.set_queue_guard(config.queue_guard.map(|d| {
        crate::recovery::queue_guard::QueueGuard::new(
            d,
            u64::from(packet_size),
            u64::from(config.ack_frequency),
        )
    }));
    recovery
}

impl Connection {
    /// A fresh [`Recovery`] for the negotiated packet size
    /// ([`new_recovery`]).
    pub(in crate::connection) fn rebuild_recovery(&mut self) {
        self.recovery = new_recovery(&self.config, self.packet_size);
    }

    /// Replace the congestion controller.
    pub(crate) fn set_controller(&mut self, now: Time, cc: CcConfig) {
        let now = self.tick(now);
        std::sync::Arc::make_mut(&mut self.config).cc = cc;
        if self.state == ConnectionState::Starting {
            self.rebuild_recovery();
        } else {
            self.recovery
                .replace_controller(now, self.config.cc.build());
        }
        self.watch_send_gate(now);
    }

    /// As data sender: ask the peer for another ACK frequency when the
    /// window or RTT moved enough (ack_frequency.rs). O(1).
    pub(in crate::connection) fn update_ack_frequency(&mut self, now: Time) {
        if !self.config.requests_ack_frequency() || !self.send.has_pending() {
            return;
        }
        // The window the sender can fill (the queue guard's cap, if
        // smaller): a receiver asked to acknowledge every ⌊cwnd/8⌋ packets
        // of a window the cap keeps at a few packets would stall the ACK
        // clock.
        let cwnd = self.recovery.window_bytes();
        let srtt = self.recovery.rtt().srtt();
        if self
            .ack_policy
            .update(now, cwnd, self.packet_size, srtt, self.config.max_ack_delay)
        {
            self.recv.request_ack_now();
        }
    }

    pub(crate) fn apply(&mut self, out: RecoveryOutcome, trigger: crate::trace::LossTrigger) {
        self.trace_lost(self.now, &out, trigger);
        if self.pmtud.is_enabled() {
            self.pmtud.on_data_acked(out.largest_acked_bytes);
            if out.newly_lost > 0 && self.pmtud.on_data_lost(self.now, out.largest_lost_bytes) {
                self.sync_packet_size();
            }
        }
        self.send.on_acked_with(&out.acked_blocks, |_| {});
        self.send.on_lost(self.now, &out.lost_blocks);
        self.recovery.recycle(out);
        self.report_abandoned();
        // An ACK, a loss or an RTO is where a controller's hold begins or
        // ends (RTW-TCP's freeze and thaw).
        self.watch_send_gate(self.now);
    }

    pub(in crate::connection) fn maybe_reprobe(&mut self, now: Time) {
        if self.config.startup != StartupMode::PacketPair
            || !matches!(self.state, ConnectionState::Connected)
        {
            return;
        }
        let window = self
            .recovery
            .rtt()
            .srtt()
            .unwrap_or(Duration::from_millis(100));
        if self.probe.on_nack(
            now,
            self.config.reprobe_nack_burst,
            window,
            self.config.reprobe_min_interval,
        ) {
            self.start_probe(now, false);
        }
    }

    /// A packet-pair test was judged (crate::probe): RTT samples go to
    /// the estimator; a start-up measurement that passed the consistency
    /// rule raises the controller's window (never its ssthresh below
    /// slow start's: the controller wrapper keeps it); a fallback leaves
    /// the controller in slow start.
    pub(crate) fn on_probe_outcome(&mut self, now: Time, outcome: ProbeOutcome) {
        for r in outcome.rtts.into_iter().flatten() {
            self.recovery.on_rtt_sample(r);
        }
        if !outcome.decision.initial {
            return;
        }
        // Data has been flowing with the initial window since the probes
        // left; nothing waits for the decision.
        self.data_ready = true;
        if let Some(result) = outcome.used() {
            let window = result.burst_bytes.min(self.config.max_initial_window_bytes);
            let m = peregrine_cc::StartupMeasurement {
                bandwidth_bytes_per_sec: result.bandwidth_bytes_per_sec,
                rtt: result.latency,
                window_bytes: window,
                pipe_bytes: result.burst_bytes,
            };
            self.recovery.on_startup_measurement(now, &m);
            self.initial_window = Some(window);
        }
    }
}
