//! qlog from the core's trace stream (`peregrine_proto::trace`): one
//! `.sqlog` file per connection endpoint, in qlog's JSON-SEQ form
//! (`qlog_version` 0.3, the form qvis and the qlog tools read).
//!
//! A file is a sequence of records, each an ASCII record separator
//! (0x1E), one JSON object and a line feed (RFC 7464). The first record
//! is the header: `qlog_version`, `qlog_format` (`JSON-SEQ`), `title`,
//! and `trace` with the `vantage_point` (`client`/`server`) and the
//! `common_fields` (`protocol_type` `["SLTP"]`, relative times in
//! milliseconds from `reference_time` 0 — the simulation's start, or the
//! runtime endpoint's bind). Every other record is one event:
//! `{"time": ms, "name": "category:event", "data": {…}}`.
//!
//! Names follow QUIC's qlog events where the meaning is the same, so
//! qvis's sequence and congestion views work:
//!
//! | trace event | qlog name | data |
//! |---|---|---|
//! | packet sent / received | `transport:packet_sent` / `transport:packet_received` | `header` (`packet_type`: `initial` for START/REJECT, `1RTT` otherwise; `packet_number`; `sltp_type`, `flags`, `src_id`, `dest_id`), `raw.length`, `frames` (`stream` with `stream_id`, `length`, `fin` and `sltp_message_no`/`sltp_block_index`/`sltp_block_count`; `ack` with `ack_delay` and `acked_ranges`; `sltp_*` for SLTP's own) |
//! | packets lost | `recovery:packet_lost` (one per packet) | `header.packet_number`, `trigger`: `sltp_ack_threshold` (packet or time threshold after an ACK), `sltp_nack`, `pto_expired` |
//! | metrics | `recovery:metrics_updated` | `congestion_window`, `bytes_in_flight`, `ssthresh`, `smoothed_rtt`, `rtt_variance`, `min_rtt` (ms), `pacing_rate` (bit/s) |
//! | controller state | `recovery:congestion_state_updated` | `old`, `new` (`open`, `disorder`, `cwr`, `recovery`, `loss`), `sltp_mode` |
//! | stream opened | `transport:stream_state_updated` | `stream_id`, `new`: `open` |
//! | connected / peer closed / closed | `connectivity:connection_state_updated` | `new`: `handshake_complete` / `draining` / `closed` (+ `connectivity:connection_closed` with `reason`) |
//! | link hint | `sltp:link_hint_received` | `kind`, `predicted_duration` (ms), `cqi` |
//! | message delivered / abandoned | `sltp:message_delivered` / `sltp:message_abandoned` | `stream_id`, `message_no`, `length` / `reason` |
//! | link-hint effects | `sltp:link_hint_applied`, `sltp:send_window_held`, `sltp:send_window_released` | `kind`, `effect`, `congestion_window`, `held_for` (ms), `reduced` |
//! | other application events | `sltp:path_migrated`, `sltp:security_violation`, `sltp:network_reset`, `sltp:writable`, `sltp:group_*` | their fields |
//!
//! Writing is buffered (`BufWriter`) and the JSON is formatted into one
//! reused buffer: no allocation per event once it has grown.

use peregrine_cc::{CaState, LinkHintKind, Time};
use peregrine_proto::connection::events::{CloseReason, Event};
use peregrine_proto::trace::{LossTrigger, Role, TraceEvent, TraceFactory, TraceSink, TraceTarget};
use peregrine_proto::wire::{DatagramRepr, PacketType, Payload};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The ASCII record separator that starts every JSON-SEQ record.
const RS: u8 = 0x1E;

/// Writes one connection endpoint's events as qlog JSON-SEQ into `W`.
pub struct QlogSink<W: Write + Send> {
    out: W,
    line: String,
    /// The first write error; later events are dropped (a trace must
    /// never stop the connection it watches).
    failed: bool,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Appends `s` as a JSON string literal.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn ca_state(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Disorder => "disorder",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

fn hint_kind(k: LinkHintKind) -> &'static str {
    match k {
        LinkHintKind::Blockage => "blockage",
        LinkHintKind::Deafness => "deafness",
        LinkHintKind::BeamMisalignment => "beam_misalignment",
        LinkHintKind::Handover => "handover",
        LinkHintKind::CongestionFree => "congestion_free",
    }
}

impl<W: Write + Send> QlogSink<W> {
    /// Starts a file: writes the header record for `target`, titled
    /// `title` (e.g. the flow's name).
    ///
    /// Errors: `W`'s.
    pub fn new(mut out: W, title: &str, target: &TraceTarget) -> std::io::Result<Self> {
        let mut h = String::new();
        h.push_str("{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":");
        json_str(&mut h, title);
        h.push_str(",\"trace\":{\"title\":");
        json_str(&mut h, title);
        let role = match target.role {
            Role::Client => "client",
            Role::Server => "server",
        };
        let _ = write!(
            h,
            ",\"vantage_point\":{{\"name\":\"peregrine\",\"type\":\"{role}\"}},\
             \"common_fields\":{{\"protocol_type\":[\"SLTP\"],\"time_format\":\"relative\",\
             \"reference_time\":0,\"group_id\":\"{:04x}\"}},\
             \"configuration\":{{\"time_units\":\"ms\"}},\
             \"sltp\":{{\"local_id\":{},\"remote\":\"{}\",\"created\":{}}}}}}}",
            target.local_id,
            target.local_id,
            target.remote,
            ms(target.created.as_nanos())
        );
        out.write_all(&[RS])?;
        out.write_all(h.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(QlogSink {
            out,
            line: String::with_capacity(512),
            failed: false,
        })
    }

    /// Flushes what is buffered (dropping the sink flushes too).
    ///
    /// Errors: `W`'s.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// The writer (e.g. the bytes written, for a `Vec<u8>`).
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    fn begin(&mut self, now: Time, name: &str) {
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"time\":{},\"name\":\"{name}\",\"data\":{{",
            ms(now.as_nanos())
        );
    }

    fn end(&mut self) {
        self.line.push_str("}}");
        if self.failed {
            return;
        }
        let r = self
            .out
            .write_all(&[RS])
            .and_then(|()| self.out.write_all(self.line.as_bytes()))
            .and_then(|()| self.out.write_all(b"\n"));
        self.failed = r.is_err();
    }

    fn packet(
        &mut self,
        now: Time,
        name: &str,
        dg: &DatagramRepr<'_>,
        pn: Option<u64>,
        size: usize,
    ) {
        self.begin(now, name);
        let h = &dg.header;
        let qtype = match h.pk_type {
            PacketType::Start | PacketType::Reject => "initial",
            _ => "1RTT",
        };
        let l = &mut self.line;
        let _ = write!(l, "\"header\":{{\"packet_type\":\"{qtype}\"");
        if let Some(pn) = pn {
            let _ = write!(l, ",\"packet_number\":{pn}");
        }
        let _ = write!(
            l,
            ",\"sltp_type\":\"{}\",\"src_id\":{},\"dest_id\":{},\"flags\":[",
            h.pk_type.name(),
            h.src_id,
            h.dest_id
        );
        for (i, f) in h.flags.names().enumerate() {
            if i > 0 {
                l.push(',');
            }
            let _ = write!(l, "\"{f}\"");
        }
        let _ = write!(l, "]}},\"raw\":{{\"length\":{size}}},\"frames\":[");
        match &dg.payload {
            Payload::Data(d) => {
                for (i, f) in d.frames.iter().enumerate() {
                    if i > 0 {
                        l.push(',');
                    }
                    if f.is_skip() {
                        let _ = write!(
                            l,
                            "{{\"frame_type\":\"sltp_skip\",\"stream_id\":{},\"sltp_message_no\":{}}}",
                            f.stream_id, f.message_number
                        );
                    } else {
                        let _ = write!(
                            l,
                            "{{\"frame_type\":\"stream\",\"stream_id\":{},\"length\":{},\"fin\":{},\
                             \"sltp_message_no\":{},\"sltp_block_index\":{},\"sltp_block_count\":{},\
                             \"sltp_reliability\":\"{}\"}}",
                            f.stream_id,
                            f.data.len(),
                            f.is_end_of_message(),
                            f.message_number,
                            f.block_index,
                            f.block_count,
                            f.reliability.name()
                        );
                    }
                }
            }
            Payload::Ack(a) => {
                let _ = write!(
                    l,
                    "{{\"frame_type\":\"ack\",\"ack_delay\":{},\"acked_ranges\":[",
                    f64::from(a.ack_delay_us) / 1e3
                );
                // Descending ranges (docs/protocol.md §6.5) as [low, high].
                let mut hi = a.largest_acked;
                let mut lo = hi.saturating_sub(u64::from(a.first_range));
                let _ = write!(l, "[{lo},{hi}]");
                for r in &a.ranges {
                    hi = lo.saturating_sub(u64::from(r.gap) + 2);
                    lo = hi.saturating_sub(u64::from(r.length));
                    let _ = write!(l, ",[{lo},{hi}]");
                }
                l.push_str("]}");
            }
            Payload::Nack(n) => {
                l.push_str("{\"frame_type\":\"sltp_nack\",\"missing_packets\":[");
                for (i, m) in n.missing_packets.iter().enumerate() {
                    if i > 0 {
                        l.push(',');
                    }
                    let last = m.first.saturating_add(u64::from(m.count).saturating_sub(1));
                    let _ = write!(l, "[{},{last}]", m.first);
                }
                l.push_str("],\"missing_blocks\":[");
                for (i, b) in n.missing_blocks.iter().enumerate() {
                    if i > 0 {
                        l.push(',');
                    }
                    let _ = write!(
                        l,
                        "{{\"stream_id\":{},\"message_no\":{},\"block_index\":{}}}",
                        b.stream_id, b.message_number, b.block_index
                    );
                }
                l.push_str("]}");
            }
            Payload::Echo(e) => {
                let _ = write!(
                    l,
                    "{{\"frame_type\":\"sltp_{}\",\"probe_id\":{},\"timestamp_ns\":{}}}",
                    h.pk_type.name().to_ascii_lowercase(),
                    e.probe_id,
                    e.timestamp_ns
                );
            }
            Payload::Cwin(c) => {
                let _ = write!(
                    l,
                    "{{\"frame_type\":\"sltp_cwin\",\"window_bytes\":{}}}",
                    c.window_bytes
                );
            }
            Payload::Group(g) => {
                let _ = write!(
                    l,
                    "{{\"frame_type\":\"sltp_{}\",\"group_id\":{}}}",
                    h.pk_type.name().to_ascii_lowercase(),
                    g.group_id
                );
            }
            _ => {
                let _ = write!(
                    l,
                    "{{\"frame_type\":\"sltp_{}\"}}",
                    h.pk_type.name().to_ascii_lowercase()
                );
            }
        }
        l.push(']');
        self.end();
    }

    fn app_event(&mut self, now: Time, ev: &Event) {
        match ev {
            Event::Connected => {
                self.begin(now, "connectivity:connection_state_updated");
                self.line.push_str("\"new\":\"handshake_complete\"");
            }
            Event::PeerClosed => {
                self.begin(now, "connectivity:connection_state_updated");
                self.line.push_str("\"new\":\"draining\"");
            }
            Event::Closed {
                reason,
                undelivered,
            } => {
                self.begin(now, "connectivity:connection_closed");
                let owner = match reason {
                    CloseReason::Local | CloseReason::Aborted => "local",
                    _ => "remote",
                };
                let _ = write!(self.line, "\"owner\":\"{owner}\",\"reason\":");
                let text = format!("{reason:?}");
                json_str(&mut self.line, &text);
                let _ = write!(self.line, ",\"sltp_undelivered\":{}", undelivered.len());
                self.end();
                self.begin(now, "connectivity:connection_state_updated");
                self.line.push_str("\"new\":\"closed\"");
            }
            Event::MessageReceived { stream, id, bytes } => {
                self.begin(now, "sltp:message_delivered");
                let _ = write!(
                    self.line,
                    "\"stream_id\":{stream},\"message_no\":{},\"length\":{}",
                    id.number,
                    bytes.len()
                );
            }
            Event::MessageAbandoned { id, reason } => {
                self.begin(now, "sltp:message_abandoned");
                let _ = write!(
                    self.line,
                    "\"stream_id\":{},\"message_no\":{},\"reason\":",
                    id.stream, id.number
                );
                let text = format!("{reason:?}");
                json_str(&mut self.line, &text);
            }
            Event::PathMigrated {
                from,
                to,
                congestion_reset,
            } => {
                self.begin(now, "sltp:path_migrated");
                let _ = write!(
                    self.line,
                    "\"from\":\"{from}\",\"to\":\"{to}\",\"congestion_reset\":{congestion_reset}"
                );
            }
            Event::SecurityViolation { kind, count } => {
                self.begin(now, "sltp:security_violation");
                let _ = write!(self.line, "\"kind\":\"{kind:?}\",\"count\":{count}");
            }
            Event::NetworkReset => self.begin(now, "sltp:network_reset"),
            Event::Writable => self.begin(now, "sltp:writable"),
            Event::GroupJoined { group } => {
                self.begin(now, "sltp:group_joined");
                let _ = write!(self.line, "\"group_id\":{group}");
            }
            Event::GroupRejected { group } => {
                self.begin(now, "sltp:group_rejected");
                let _ = write!(self.line, "\"group_id\":{group}");
            }
            Event::GroupLeft { group } => {
                self.begin(now, "sltp:group_left");
                let _ = write!(self.line, "\"group_id\":{group}");
            }
            Event::PeerJoined { group } => {
                self.begin(now, "sltp:group_peer_joined");
                let _ = write!(self.line, "\"group_id\":{group}");
            }
            Event::PeerLeft { group } => {
                self.begin(now, "sltp:group_peer_left");
                let _ = write!(self.line, "\"group_id\":{group}");
            }
            Event::LinkHintApplied {
                kind,
                effect,
                cwnd_bytes,
            } => {
                self.begin(now, "sltp:link_hint_applied");
                let _ = write!(
                    self.line,
                    "\"kind\":\"{}\",\"effect\":\"{effect:?}\",\"congestion_window\":{cwnd_bytes}",
                    hint_kind(*kind)
                );
            }
            Event::SendWindowHeld { cwnd_bytes } => {
                self.begin(now, "sltp:send_window_held");
                let _ = write!(self.line, "\"congestion_window\":{cwnd_bytes}");
            }
            Event::SendWindowReleased {
                held_for,
                cwnd_bytes,
                reduced,
            } => {
                self.begin(now, "sltp:send_window_released");
                let _ = write!(
                    self.line,
                    "\"held_for\":{},\"congestion_window\":{cwnd_bytes},\"reduced\":{reduced}",
                    held_for.as_nanos() as f64 / 1e6
                );
            }
        }
        self.end();
    }
}

impl<W: Write + Send> TraceSink for QlogSink<W> {
    fn event(&mut self, now: Time, event: &TraceEvent<'_>) {
        match event {
            TraceEvent::PacketSent {
                datagram,
                packet_number,
                size,
            } => self.packet(
                now,
                "transport:packet_sent",
                datagram,
                *packet_number,
                *size,
            ),
            TraceEvent::PacketReceived {
                datagram,
                packet_number,
                size,
            } => self.packet(
                now,
                "transport:packet_received",
                datagram,
                *packet_number,
                *size,
            ),
            TraceEvent::PacketsLost {
                packet_numbers,
                trigger,
            } => {
                let trigger = match trigger {
                    LossTrigger::Acknowledgement => "sltp_ack_threshold",
                    LossTrigger::Nack => "sltp_nack",
                    LossTrigger::Timeout => "pto_expired",
                };
                for pn in packet_numbers.iter() {
                    self.begin(now, "recovery:packet_lost");
                    let _ = write!(
                        self.line,
                        "\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{pn}}},\
                         \"trigger\":\"{trigger}\""
                    );
                    self.end();
                }
            }
            TraceEvent::MetricsUpdated(m) => {
                self.begin(now, "recovery:metrics_updated");
                let l = &mut self.line;
                let _ = write!(
                    l,
                    "\"congestion_window\":{},\"bytes_in_flight\":{}",
                    m.cwnd_bytes, m.bytes_in_flight
                );
                if let Some(s) = m.ssthresh_bytes {
                    let _ = write!(l, ",\"ssthresh\":{s}");
                }
                for (name, d) in [
                    ("smoothed_rtt", m.smoothed_rtt),
                    ("rtt_variance", m.rtt_variance),
                    ("min_rtt", m.min_rtt),
                ] {
                    if let Some(d) = d {
                        let _ = write!(l, ",\"{name}\":{}", d.as_nanos() as f64 / 1e6);
                    }
                }
                if let Some(p) = m.pacing_rate_bps {
                    let _ = write!(l, ",\"pacing_rate\":{p}");
                }
                self.end();
            }
            TraceEvent::CongestionStateUpdated { old, new, mode } => {
                self.begin(now, "recovery:congestion_state_updated");
                if let Some(old) = old {
                    let _ = write!(self.line, "\"old\":\"{}\",", ca_state(*old));
                }
                let _ = write!(self.line, "\"new\":\"{}\"", ca_state(*new));
                if let Some(m) = mode {
                    let _ = write!(self.line, ",\"sltp_mode\":\"{m}\"");
                }
                self.end();
            }
            TraceEvent::LinkHint(h) => {
                self.begin(now, "sltp:link_hint_received");
                let _ = write!(self.line, "\"kind\":\"{}\"", hint_kind(h.kind));
                if let Some(d) = h.predicted_duration {
                    let _ = write!(
                        self.line,
                        ",\"predicted_duration\":{}",
                        d.as_nanos() as f64 / 1e6
                    );
                }
                if let Some(cqi) = h.cqi {
                    let _ = write!(self.line, ",\"cqi\":{cqi}");
                }
                self.end();
            }
            TraceEvent::StreamOpened { stream } => {
                self.begin(now, "transport:stream_state_updated");
                let _ = write!(self.line, "\"stream_id\":{stream},\"new\":\"open\"");
                self.end();
            }
            TraceEvent::AppEvent(ev) => self.app_event(now, ev),
        }
    }
}

impl<W: Write + Send> Drop for QlogSink<W> {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// Makes one `.sqlog` file per connection endpoint in a directory:
/// `<label>-<client|server>-<local id, 4 hex digits>.sqlog`.
pub struct QlogDir {
    dir: PathBuf,
    label: String,
    /// Files made so far (in creation order).
    files: std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

impl QlogDir {
    /// A factory writing into `dir` (created if missing), naming files
    /// after `label` (e.g. the flow's name; characters other than
    /// letters, digits, `.`, `-`, `_` become `_`).
    ///
    /// Errors: the directory cannot be created.
    pub fn new(dir: &Path, label: &str) -> std::io::Result<QlogDir> {
        std::fs::create_dir_all(dir)?;
        Ok(QlogDir {
            dir: dir.to_path_buf(),
            label: crate::file_name_part(label),
            files: Default::default(),
        })
    }

    /// The files made so far, shared (the factory moves into an endpoint).
    pub fn files(&self) -> std::sync::Arc<std::sync::Mutex<Vec<PathBuf>>> {
        std::sync::Arc::clone(&self.files)
    }
}

impl TraceFactory for QlogDir {
    fn sink(&mut self, target: &TraceTarget) -> Option<Box<dyn TraceSink>> {
        let role = match target.role {
            Role::Client => "client",
            Role::Server => "server",
        };
        let path = self.dir.join(format!(
            "{}-{role}-{:04x}.sqlog",
            self.label, target.local_id
        ));
        // A file that cannot be made leaves the connection untraced: a
        // trace must never stop the connection it watches.
        let file = File::create(&path).ok()?;
        let sink = QlogSink::new(BufWriter::new(file), &self.label, target).ok()?;
        if let Ok(mut f) = self.files.lock() {
            f.push(path);
        }
        Some(Box::new(sink))
    }
}
