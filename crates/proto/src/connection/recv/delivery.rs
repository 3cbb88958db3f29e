//! The application's side of receiving: events and their delivery order
//! (streams held by the application), the per-stream credit the receiver
//! announces in its ACKs, and the free receive buffer.

use crate::connection::{Connection, Event, MessageId};
use crate::wire::{AckPayload, StreamCredit};

impl Connection {
    /// The next event for the application.
    /// O(1) amortized: a held stream's message is parked once, not
    /// rescanned at every call.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        while let Some(Event::MessageReceived { stream, .. }) = self.events.front() {
            if !self.held.contains(stream) {
                break;
            }
            let stream = *stream;
            let ev = self.events.pop_front()?;
            self.parked.entry(stream).or_default().push_back(ev);
        }
        // The end of the connection never overtakes a held message: an
        // application told "closed" must have been handed every message
        // first (the runtime reads "closed, inbox empty" as the end).
        if !self.parked.is_empty()
            && matches!(
                self.events.front(),
                Some(Event::PeerClosed | Event::Closed { .. })
            )
        {
            return None;
        }
        let ev = self.events.pop_front()?;
        if let Event::MessageReceived { id, .. } = &ev {
            self.on_app_read(*id);
        }
        if let Event::MessageReceived { bytes, .. } = &ev {
            let before = self.free_receive_bytes();
            self.recv.on_read(bytes.len());
            let half = self.config.max_receive_buffer_bytes / 2;
            if before < half && self.free_receive_bytes() >= half {
                // The window reopened: tell the sender without waiting.
                self.recv.request_ack_at(self.now);
            }
        }
        Some(ev)
    }

    /// The application stops (`true`) or resumes reading `stream`: while
    /// held, its messages stay unread (and keep its credit from growing).
    pub(crate) fn hold_stream(&mut self, stream: u16, held: bool) {
        if held {
            self.held.insert(stream);
        } else {
            self.held.remove(&stream);
            // Its parked messages came before everything still queued.
            for ev in self.parked.remove(&stream).into_iter().flatten().rev() {
                self.events.push_front(ev);
            }
        }
    }

    /// Whether `poll_event` may have something (the endpoint's queue of
    /// connections with events).
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// A delivered message waits for the application.
    pub(crate) fn on_delivered(&mut self, id: MessageId) {
        if self.config.initial_stream_credit.is_some() {
            self.unread.entry(id.stream).or_default().insert(id.number);
        }
    }

    fn on_app_read(&mut self, id: MessageId) {
        let Some(credit) = self.config.initial_stream_credit else {
            return;
        };
        if let Some(set) = self.unread.get_mut(&id.stream) {
            set.remove(&id.number);
            if set.is_empty() {
                self.unread.remove(&id.stream);
            }
        }
        // Tell the sender without waiting once half the credit came back.
        let limit = self.credit_limit(id.stream, credit);
        let old = self.advertised.get(&id.stream).copied().unwrap_or(credit);
        if limit.saturating_sub(old) >= (credit / 2).max(1) {
            self.recv.request_ack_at(self.now);
        }
    }

    /// Whether a frame carries data of a message at or above our current
    /// credit (which is at least every credit we ever announced).
    pub(crate) fn beyond_credit(&self, frames: &crate::wire::Frames<'_>) -> bool {
        let Some(credit) = self.config.initial_stream_credit else {
            return false;
        };
        frames
            .iter()
            .any(|f| !f.is_skip() && f.message_number >= self.credit_limit(f.stream_id, credit))
    }

    /// Our credit for `stream`: the oldest message not yet read (or not yet
    /// delivered) plus the initial credit.
    fn credit_limit(&self, stream: u16, credit: u32) -> u32 {
        let mut base = self.recv.first_unfinished(stream);
        if let Some(&n) = self.unread.get(&stream).and_then(|s| s.first()) {
            base = base.min(n);
        }
        base.saturating_add(credit)
    }

    /// The credit section of the next ACK: up to `max` streams, taken
    /// round-robin from the streams data arrived on, ascending.
    pub(crate) fn credits_for_ack(&mut self, max: usize) -> Vec<StreamCredit> {
        let Some(credit) = self.config.initial_stream_credit else {
            return Vec::new();
        };
        let ids = self.recv.stream_ids();
        let max = max.min(AckPayload::MAX_CREDITS);
        if ids.is_empty() || max == 0 {
            return Vec::new();
        }
        let start = ids.partition_point(|&id| id < self.credit_cursor);
        let mut chosen: Vec<u16> = ids
            .iter()
            .cycle()
            .skip(start)
            .take(ids.len().min(max))
            .copied()
            .collect();
        if ids.len() > max {
            self.credit_cursor = chosen.last().map_or(0, |&id| id.wrapping_add(1));
        }
        chosen.sort_unstable();
        chosen
            .into_iter()
            .map(|stream| {
                let max_message = self.credit_limit(stream, credit);
                self.advertised.insert(stream, max_message);
                StreamCredit {
                    stream,
                    max_message,
                }
            })
            .collect()
    }

    pub(in crate::connection) fn free_receive_bytes(&self) -> usize {
        self.config
            .max_receive_buffer_bytes
            .saturating_sub(self.recv.buffered_bytes())
    }
}
