//! A connection's trace points (`crate::trace`): the endpoint calls these
//! around each input and output, so the send and receive paths carry no
//! tracing code of their own. Each returns at once when the connection
//! has no sink.

use crate::connection::{Connection, Event};
use crate::recovery::RecoveryOutcome;
use crate::send_helpers::{TxBuf, Written};
use crate::trace::{LossTrigger, Metrics, TraceEvent, TraceSink};
use crate::wire::{expand_packet_number, DatagramRepr, Payload, HEADER_LEN};
use peregrine_cc::{CaState, LinkHint, Time};
use std::fmt;

/// A connection's sink and what it last reported (to trace changes only).
pub(crate) struct Tracer {
    sink: Box<dyn TraceSink>,
    last_metrics: Option<Metrics>,
    last_state: Option<(CaState, Option<&'static str>)>,
    /// Scratch for the packet numbers of one loss report (kept, so a
    /// report allocates nothing once it has grown).
    lost: Vec<u64>,
}

impl fmt::Debug for Tracer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracer")
            .field("last_metrics", &self.last_metrics)
            .finish_non_exhaustive()
    }
}

impl Tracer {
    pub(crate) fn new(sink: Box<dyn TraceSink>) -> Tracer {
        Tracer {
            sink,
            last_metrics: None,
            last_state: None,
            lost: Vec::new(),
        }
    }
}

impl Connection {
    /// Starts tracing this connection into `sink`.
    pub(crate) fn set_trace_sink(&mut self, sink: Box<dyn TraceSink>) {
        self.tracer = Some(Tracer::new(sink));
    }

    /// The datagram `w` this connection just wrote into `bytes`
    /// (plaintext, before sealing). The header and the packet number come
    /// from the builder's report; only the payload is decoded, and only
    /// when there is a sink: O(payload) then, O(1) otherwise.
    pub(crate) fn trace_sent(&mut self, now: Time, bytes: &TxBuf<'_>, w: &Written) {
        if self.tracer.is_none() {
            return;
        }
        let Some(payload) = bytes
            .get(HEADER_LEN..w.len())
            .and_then(|p| Payload::decode(w.pk_type(), p).ok())
        else {
            return;
        };
        let dg = DatagramRepr {
            header: w.header,
            payload,
            auth_tag: &[],
        };
        // Its length on the wire: the tag only where this packet will be
        // sealed (not on an unprotected connection, nor on START/REJECT),
        // so a plain datagram is traced with the length it is received
        // with.
        let size = w.len()
            + if self.seals(w.pk_type()) {
                crate::wire::AUTH_TAG_LEN
            } else {
                0
            };
        if let Some(t) = self.tracer.as_mut() {
            t.sink.event(
                now,
                &TraceEvent::PacketSent {
                    datagram: &dg,
                    packet_number: w.packet_number,
                    size,
                },
            );
        }
        self.trace_metrics(now);
    }

    /// A datagram for this connection (plaintext), `size` bytes as
    /// received; called before the connection handles it, so its packet
    /// number expands as the receive path will expand it. O(1) without a
    /// sink.
    pub(crate) fn trace_received(&mut self, now: Time, dg: &DatagramRepr<'_>, size: usize) {
        let largest = self.recv.largest();
        if let Some(t) = self.tracer.as_mut() {
            let packet_number = dg
                .payload
                .packet_number()
                .map(|pn| expand_packet_number(pn, largest));
            t.sink.event(
                now,
                &TraceEvent::PacketReceived {
                    datagram: dg,
                    packet_number,
                    size,
                },
            );
        }
    }

    /// The packets `out` declares lost, by `trigger`. O(1) without a sink.
    pub(in crate::connection) fn trace_lost(
        &mut self,
        now: Time,
        out: &RecoveryOutcome,
        trigger: LossTrigger,
    ) {
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        if out.lost_blocks.is_empty() {
            return;
        }
        t.lost.clear();
        t.lost.extend(out.lost_blocks.iter().map(|(pn, _)| *pn));
        t.lost.sort_unstable();
        t.lost.dedup();
        let lost = std::mem::take(&mut t.lost);
        t.sink.event(
            now,
            &TraceEvent::PacketsLost {
                packet_numbers: &lost,
                trigger,
            },
        );
        t.lost = lost;
    }

    /// After an input: the metrics and the controller's state, when they
    /// changed since last reported. O(1); inlined, so an untraced
    /// connection pays one branch on every input, not a call.
    #[inline]
    pub(crate) fn trace_metrics(&mut self, now: Time) {
        if self.tracer.is_some() {
            self.trace_metrics_changed(now);
        }
    }

    /// The body of [`Self::trace_metrics`], for a traced connection.
    fn trace_metrics_changed(&mut self, now: Time) {
        let cc = self.recovery.cc_stats();
        let rtt = self.recovery.rtt();
        let m = Metrics {
            cwnd_bytes: cc.cwnd_bytes,
            bytes_in_flight: self.recovery.bytes_in_flight(),
            ssthresh_bytes: cc.ssthresh_bytes,
            smoothed_rtt: rtt.srtt(),
            rtt_variance: rtt.rttvar(),
            min_rtt: rtt.min_rtt(),
            pacing_rate_bps: cc.pacing_rate_bytes_per_sec.map(|r| r.saturating_mul(8)),
        };
        let state = (cc.ca_state, cc.mode);
        let Some(t) = self.tracer.as_mut() else {
            return;
        };
        if t.last_metrics != Some(m) {
            t.last_metrics = Some(m);
            t.sink.event(now, &TraceEvent::MetricsUpdated(m));
        }
        if t.last_state != Some(state) {
            let old = t.last_state.map(|s| s.0);
            t.last_state = Some(state);
            t.sink.event(
                now,
                &TraceEvent::CongestionStateUpdated {
                    old,
                    new: state.0,
                    mode: state.1,
                },
            );
        }
    }

    /// A link hint handed to the controller. O(1) without a sink.
    pub(crate) fn trace_link_hint(&mut self, now: Time, hint: &LinkHint) {
        if let Some(t) = self.tracer.as_mut() {
            t.sink.event(now, &TraceEvent::LinkHint(hint));
        }
        self.trace_metrics(now);
    }

    /// A stream opened or reconfigured by the application.
    pub(crate) fn trace_stream_opened(&mut self, now: Time, stream: u16) {
        if let Some(t) = self.tracer.as_mut() {
            t.sink.event(now, &TraceEvent::StreamOpened { stream });
        }
    }

    /// An event as the application receives it, at the connection's
    /// latest instant. O(1) without a sink.
    pub(crate) fn trace_app_event(&mut self, event: &Event) {
        let now = self.now;
        if let Some(t) = self.tracer.as_mut() {
            t.sink.event(now, &TraceEvent::AppEvent(event));
        }
    }
}
