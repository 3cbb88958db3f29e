//! Measuring from the up-call: the server's echoes and the client's
//! clocks run on the endpoint driver's thread (seed 003 §III-E's up-call,
//! `Connection::on_message`), so what `perf` reports is the transport's
//! time, not the tool's own hops between threads.
//!
//! Read through the inbox, a message reaches the tool's task only after
//! the driver has woken it, and an echo leaves only after that task has
//! woken the driver again: two cross-thread wake-ups per message on each
//! side, tens of µs each on a virtual machine and milliseconds when the
//! cores are busy — in a latency sample they were the tool, not the
//! connection. Kernel TCP's echo server is woken by the kernel once and
//! answers from the same thread; answering from the up-call is the same
//! shape.

use peregrine::{Bytes, Connection};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Echoes every message of one stream from the driver's thread for as
/// long as it lives; dropping it stops the echo (and releases the
/// connection handle the callback holds).
pub(crate) struct UpcallEcho {
    /// The handle the callback sends with; emptied on drop, so the
    /// callback (stored in the connection) does not keep its own
    /// connection alive.
    slot: Arc<Mutex<Option<Connection>>>,
    /// Sends what the callback could not queue at once, in order.
    fallback: tokio::task::JoinHandle<()>,
}

impl UpcallEcho {
    /// Echo each message of `stream`, cut to its first `max_len` bytes,
    /// back on the same stream. The answer is queued in the callback with
    /// `try_send` (the driver sends it on its next turn, no wake-up);
    /// when the send buffer is full — or answers already wait — it goes
    /// to a task that waits for room, so echoes keep their order. O(1)
    /// per message, no copy (`Bytes` slices).
    pub(crate) fn start(conn: &Connection, stream: u16, max_len: usize) -> UpcallEcho {
        let slot = Arc::new(Mutex::new(Some(conn.clone())));
        let waiting = Arc::new(AtomicUsize::new(0));
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        let (cb_slot, cb_waiting) = (slot.clone(), waiting.clone());
        conn.on_message(stream, move |s, b| {
            let b = if b.len() > max_len {
                b.slice(..max_len)
            } else {
                b
            };
            // Callbacks run one at a time on the driver's thread, so
            // `waiting` only grows here.
            if cb_waiting.load(Ordering::Acquire) == 0 {
                let c = cb_slot.lock().unwrap_or_else(|p| p.into_inner());
                let Some(c) = c.as_ref() else { return };
                if c.try_send(s, b.clone()).is_ok() {
                    return;
                }
            }
            cb_waiting.fetch_add(1, Ordering::AcqRel);
            let _ = tx.send(b);
        });
        let task_slot = slot.clone();
        let fallback = tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                let c = task_slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let Some(c) = c else { break };
                let sent = c.send(stream, b).await;
                // Decremented only once queued: a later echo the callback
                // queues directly cannot overtake this one.
                waiting.fetch_sub(1, Ordering::AcqRel);
                if sent.is_err() {
                    break;
                }
            }
        });
        UpcallEcho { slot, fallback }
    }
}

impl Drop for UpcallEcho {
    fn drop(&mut self) {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.fallback.abort();
    }
}

/// Time-stamps every message of one stream on the driver's thread as it
/// is delivered, and hands `(message, arrival)` to the reader: the
/// arrival is the transport's, whenever the reader's task gets to run.
pub(crate) struct UpcallClock {
    rx: mpsc::UnboundedReceiver<(Bytes, Instant)>,
}

impl UpcallClock {
    /// Start stamping the messages of `stream`. O(1) per message.
    pub(crate) fn start(conn: &Connection, stream: u16) -> UpcallClock {
        let (tx, rx) = mpsc::unbounded_channel();
        conn.on_message(stream, move |_, b| {
            let _ = tx.send((b, Instant::now()));
        });
        UpcallClock { rx }
    }

    /// The next message and its arrival time; `None` once the connection
    /// is gone (its callbacks dropped).
    pub(crate) async fn next(&mut self) -> Option<(Bytes, Instant)> {
        self.rx.recv().await
    }
}
