//! The application's side of sending: queueing a message on a stream,
//! configuring streams and the scheduler, expiring messages past their
//! deadline and reporting the abandoned ones.

use crate::connection::{Connection, ConnectionState, Event, MessageData, MessageId, SendError};
use crate::sched::SchedulerConfig;
use crate::streams::StreamConfig;
use peregrine_cc::Time;

impl Connection {
    /// Queue a message; see [`Endpoint::send_message`](crate::Endpoint::send_message).
    pub(crate) fn send_message(
        &mut self,
        now: Time,
        stream: u16,
        bytes: impl MessageData,
        deadline: Option<Time>,
    ) -> Result<MessageId, SendError> {
        let now = self.tick(now);
        let len = bytes.message_len();
        if !matches!(
            self.state,
            ConnectionState::Starting | ConnectionState::Connected
        ) {
            return Err(SendError::Closed);
        }
        if len > self.config.max_message_size {
            return Err(SendError::MessageTooLarge {
                size: len,
                max: self.config.max_message_size,
            });
        }
        if self.send.outstanding_messages() >= self.config.max_outstanding_messages
            || self.send.buffered_bytes() + len > self.config.max_send_buffer_bytes
            || !self.send.stream_has_room(stream, len)
        {
            return Err(SendError::BufferFull);
        }
        self.send
            .enqueue(now, stream, bytes.into_message_bytes(), deadline)
    }

    /// How full the buffers are that a message on `stream` must fit in.
    /// O(log streams).
    pub(crate) fn send_room(&self, stream: u16) -> super::SendRoom {
        let (stream_bytes, stream_limit_bytes) = self.send.stream_buffer(stream);
        super::SendRoom {
            open: matches!(
                self.state,
                ConnectionState::Starting | ConnectionState::Connected
            ),
            connection_bytes: self.send.buffered_bytes(),
            connection_limit_bytes: self.config.max_send_buffer_bytes,
            stream_bytes,
            stream_limit_bytes,
            messages: self.send.outstanding_messages(),
            messages_limit: self.config.max_outstanding_messages,
        }
    }

    /// Whether a message queued now on `stream` would only join data that
    /// already waits to be sent, on a stream of class 1–3
    /// ([`Endpoint::send_joins_pending`](crate::Endpoint::send_joins_pending)).
    /// O(log streams).
    pub(crate) fn send_joins_pending(&self, stream: u16) -> bool {
        self.send.has_pending() && self.send.stream_config(stream).class > 0
    }

    /// Open or reconfigure a stream.
    pub(crate) fn configure_stream(
        &mut self,
        now: Time,
        stream: u16,
        config: StreamConfig,
    ) -> Result<(), SendError> {
        self.tick(now);
        if !config.is_valid() {
            return Err(SendError::InvalidStreamConfig(stream));
        }
        self.send.configure(stream, config);
        Ok(())
    }

    /// Replace the stream scheduler.
    pub(crate) fn set_scheduler(&mut self, now: Time, config: SchedulerConfig) {
        self.tick(now);
        std::sync::Arc::make_mut(&mut self.config).scheduler = config;
        self.send.set_scheduler(config);
    }

    /// Abandon messages past their deadline and report every abandoned one.
    pub(crate) fn expire_messages(&mut self, now: Time) {
        self.send.expire(now);
        self.report_abandoned();
    }

    /// Turn abandoned messages into events.
    pub(crate) fn report_abandoned(&mut self) {
        while let Some((id, reason)) = self.send.pop_abandoned() {
            self.events
                .push_back(Event::MessageAbandoned { id, reason });
        }
    }
}
