//! # Streams: configuration, reliability modes, deadlines, flow control
//!
//! A connection carries up to 65,536 streams, numbered by the application;
//! either side opens one simply by sending on it (or configures it first
//! with [`Endpoint::open_stream`](crate::endpoint::Endpoint::open_stream);
//! an unconfigured stream is [`StreamConfig::default`]). Each stream has:
//!
//! * a **priority class**, 0 (most urgent) to 3, used by ABS, adaptive,
//!   EDF's tie-break and aging, and carried in the header's PRI field (the
//!   most urgent class among a datagram's frames, docs/protocol.md §6.4);
//! * a **weight** for WFQ;
//! * a **reliability mode** ([`StreamReliability`]);
//! * a **send-buffer limit** (per-stream flow control on the sending side,
//!   8 MiB by default so one bulk stream cannot fill the connection's
//!   16 MiB and keep other streams' messages from being queued; the
//!   connection-wide limits and the peer's receive window apply too);
//! * a **credit** from the receiver, when the peer sets
//!   `ConnectionConfig::initial_stream_credit`: new blocks only of messages
//!   numbered below it; the receiver raises it as its application reads
//!   (docs/protocol.md §6.5.1 and §10). A stream held by its credit does not
//!   hold the others back.
//!
//! A message may carry a **deadline**. A message not completely
//! acknowledged by then is dropped by the sender, reported with
//! [`Event::MessageAbandoned`](crate::connection::Event::MessageAbandoned),
//! and — if the receiver could be waiting for it — announced with a
//! *skip frame* (docs/protocol.md §6.3.1, like PR-SCTP's FORWARD-TSN but
//! naming one message) so delivery on an ordered stream never stalls
//! behind it. Unreliable messages are never retransmitted: one lost block
//! abandons the message (reason [`AbandonReason::Lost`]).

use crate::wire::Reliability;

/// How a stream delivers its messages.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum StreamReliability {
    /// Retransmitted until acknowledged (or until a message's deadline),
    /// delivered in order. Frames carry R = 0 (R = 1 `partial` for a
    /// message with a deadline).
    #[default]
    ReliableOrdered,
    /// Retransmitted until acknowledged (or the deadline), delivered as
    /// soon as complete. Frames carry R = 3.
    ReliableUnordered,
    /// Never retransmitted (ST_RTR semantics: a lost block abandons the
    /// message), delivered as soon as complete, at most once. R = 2.
    Unreliable,
}

impl StreamReliability {
    /// The frame's R code for a message with or without a deadline.
    pub fn wire(self, has_deadline: bool) -> Reliability {
        match self {
            StreamReliability::ReliableOrdered if has_deadline => Reliability::Partial,
            StreamReliability::ReliableOrdered => Reliability::Reliable,
            StreamReliability::ReliableUnordered => Reliability::ReliableUnordered,
            StreamReliability::Unreliable => Reliability::Unreliable,
        }
    }

    /// Whether the receiver delivers frames of this R code in order.
    pub fn ordered(r: Reliability) -> bool {
        matches!(r, Reliability::Reliable | Reliability::Partial)
    }
}

/// One stream's settings.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// Priority class, 0 (most urgent) to 3.
    pub class: u8,
    /// WFQ weight, ≥ 1.
    pub weight: u32,
    /// Reliability mode.
    pub reliability: StreamReliability,
    /// Most bytes of this stream's messages queued or waiting for
    /// acknowledgement: its own send buffer (`send_message` answers
    /// `BufferFull` beyond it, and the runtime's `send` waits). The
    /// connection's `max_send_buffer_bytes` bounds all streams together;
    /// a stream limit below it keeps one busy stream from taking the whole
    /// connection buffer, so a message on another stream is queued at once
    /// instead of waiting behind it. A stream with nothing buffered always
    /// takes one message (up to `max_message_size`), whatever this limit.
    /// Default [`DEFAULT_STREAM_SEND_BUFFER_BYTES`].
    pub max_buffered_bytes: usize,
}

/// The default per-stream send buffer, bytes (8 MiB): half the default
/// connection send buffer (`ConnectionConfig::max_send_buffer_bytes`,
/// 16 MiB), so one bulk stream leaves the other half to the rest; and
/// twice the default receive buffer (4 MiB), the most the peer's window
/// lets be in flight, so one stream alone still keeps that window full
/// with as much again queued behind it.
pub const DEFAULT_STREAM_SEND_BUFFER_BYTES: usize = 8 << 20;

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            class: 2,
            weight: 1,
            reliability: StreamReliability::ReliableOrdered,
            max_buffered_bytes: DEFAULT_STREAM_SEND_BUFFER_BYTES,
        }
    }
}

impl StreamConfig {
    /// Whether the settings are usable (class ≤ 3, weight ≥ 1).
    pub fn is_valid(&self) -> bool {
        self.class <= 3 && self.weight >= 1
    }
}

/// Why the sender gave up a message.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AbandonReason {
    /// Its deadline passed before it was completely acknowledged.
    DeadlineExpired,
    /// A block of an unreliable message was lost (it is never retransmitted).
    Lost,
}

/// Per-stream counters of the sending side.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// The stream.
    pub id: u16,
    /// Its priority class.
    pub class: u8,
    /// Its weight.
    pub weight: u32,
    /// Messages queued.
    pub messages_queued: u64,
    /// Messages acknowledged completely.
    pub messages_acked: u64,
    /// Messages abandoned (deadline or loss).
    pub messages_abandoned: u64,
    /// Data bytes put in packets for the first time.
    pub bytes_sent: u64,
    /// Data bytes retransmitted.
    pub bytes_retransmitted: u64,
    /// Bytes of messages waiting for acknowledgement.
    pub buffered_bytes: usize,
}
