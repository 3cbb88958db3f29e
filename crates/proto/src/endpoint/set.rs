//! # The endpoint's connections, and which of them have something to do
//!
//! Work proportional to what is active, not to what exists (issue 20):
//! a connection's wishes — a datagram to send, an event to report, its
//! next deadline — change only when the endpoint calls into it. So every
//! mutable access goes through [`ConnectionSet::get_mut`], which marks the
//! connection *touched*; before the endpoint answers a `poll_*` or
//! `handle_timeout` it *settles* the touched ones: re-keys its deadline in
//! the [`TimerQueue`], and queues it as ready to transmit and, if it has
//! events, as ready to report. The endpoint's loops then visit only those
//! queues (quinn-proto keeps the same shape: connections push
//! `EndpointEvent`s and the endpoint polls only the ones it was told
//! about).
//!
//! Only the deadline waits for the queues' readers that need it: the
//! transmit and event loops settle the queues alone
//! ([`ConnectionSet::settle_queues`]) and leave the deadline *stale*; the
//! timer's readers (`poll_timeout`, `handle_timeout`) settle everything
//! ([`ConnectionSet::settle`]). A sending connection is touched by every
//! datagram it sends, and its deadline is read once per driver turn, not
//! once per datagram (issue 36: a bulk sender recomputed every timer of
//! its connection 44 times per GSO batch). The deadline is computed from
//! the same connection state either way — a connection changes only when
//! called into, which touches it again — and the timer order is by
//! (deadline, handle), not by when it was armed, so nothing the endpoint
//! decides moves.
//!
//! Lookup by handle is a B-tree (O(log n)); connections are boxed so the
//! tree's nodes stay small and moving an entry moves a pointer.

use super::timers::TimerOrder;
use super::ConnectionHandle;
use crate::connection::Connection;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

/// A connection's key in the endpoint's `by_peer` map: the peer's
/// address and connection id.
pub(crate) type PeerKey = (SocketAddr, u16);

/// One connection and its bookkeeping.
#[derive(Debug)]
struct Slot {
    conn: Box<Connection>,
    /// Its key in the endpoint's `by_peer` map (accepted connections), so
    /// reaping removes exactly that entry instead of scanning the map.
    peer: Option<PeerKey>,
    /// In `touched`, not settled yet.
    touched: bool,
    /// In `tx_ready`.
    in_tx: bool,
    /// In `ev_ready`.
    in_ev: bool,
    /// The deadline it is armed with in `timers`.
    armed: Option<peregrine_cc::Time>,
    /// In `stale_timers`: settled for the queues only, its deadline not
    /// re-read since it was last called into.
    timer_stale: bool,
}

/// The connections of one endpoint, with the queues of the active ones.
#[derive(Debug, Default)]
pub(crate) struct ConnectionSet {
    map: BTreeMap<ConnectionHandle, Slot>,
    /// Connections called into since the last settle.
    touched: Vec<ConnectionHandle>,
    /// Connections settled for the queues only
    /// ([`settle_queues`](Self::settle_queues)): their deadline is re-read
    /// at the next full [`settle`](Self::settle).
    stale_timers: Vec<ConnectionHandle>,
    /// Each connection's next deadline (the deadline itself is in its
    /// slot).
    pub(crate) timers: TimerOrder<ConnectionHandle>,
    /// Connections that may have a datagram to send, in round-robin order
    /// (a connection that sent goes to the back).
    tx_ready: VecDeque<ConnectionHandle>,
    /// Connections that have events to report.
    ev_ready: VecDeque<ConnectionHandle>,
    /// Connections visited by the `poll_*` / `handle_timeout` loops
    /// (tests check that a turn with one active connection visits O(1)).
    pub(crate) visited: u64,
}

impl ConnectionSet {
    /// Connections held. O(1).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// A connection, read-only. O(log n).
    pub(crate) fn get(&self, handle: &ConnectionHandle) -> Option<&Connection> {
        self.map.get(handle).map(|s| &*s.conn)
    }

    /// A connection, to call into: marks it touched (it is settled before
    /// the endpoint next answers a poll). O(log n).
    pub(crate) fn get_mut(&mut self, handle: &ConnectionHandle) -> Option<&mut Connection> {
        let slot = self.map.get_mut(handle)?;
        if !slot.touched {
            slot.touched = true;
            self.touched.push(*handle);
        }
        Some(&mut slot.conn)
    }

    /// A connection, for a caller that re-keys it itself
    /// ([`refresh`](Self::refresh)). O(log n).
    pub(crate) fn get_untracked(&mut self, handle: &ConnectionHandle) -> Option<&mut Connection> {
        self.map.get_mut(handle).map(|s| &mut *s.conn)
    }

    /// Handles, ascending. O(n) for all of them.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &ConnectionHandle> {
        self.map.keys()
    }

    /// Every connection, read-only. O(n) for all of them.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Connection> {
        self.map.values().map(|s| &*s.conn)
    }

    /// Add a new connection (touched: its first datagram and deadline are
    /// looked at the next time). O(log n).
    pub(crate) fn insert(
        &mut self,
        handle: ConnectionHandle,
        conn: Connection,
        peer: Option<PeerKey>,
    ) {
        self.map.insert(
            handle,
            Slot {
                conn: Box::new(conn),
                peer,
                touched: true,
                in_tx: false,
                in_ev: false,
                armed: None,
                timer_stale: false,
            },
        );
        self.touched.push(handle);
    }

    /// Remove a connection; its `by_peer` key. Queue entries it leaves are
    /// skipped when reached. O(log n).
    pub(crate) fn remove(
        &mut self,
        handle: &ConnectionHandle,
    ) -> Option<(Box<Connection>, Option<PeerKey>)> {
        let slot = self.map.remove(handle)?;
        self.timers.rearm(*handle, slot.armed, None);
        Some((slot.conn, slot.peer))
    }

    /// Re-key a connection: its deadline, and the event queue if it has
    /// events; the transmit queue too when `tx`. O(log n).
    pub(crate) fn refresh(&mut self, handle: ConnectionHandle, tx: bool) {
        let Some(slot) = self.map.get_mut(&handle) else {
            return;
        };
        let t = slot.conn.poll_timeout();
        self.timers.rearm(handle, slot.armed, t);
        slot.armed = t;
        slot.timer_stale = false;
        if tx && !slot.in_tx {
            slot.in_tx = true;
            self.tx_ready.push_back(handle);
        }
        if !slot.in_ev && slot.conn.has_events() {
            slot.in_ev = true;
            self.ev_ready.push_back(handle);
        }
    }

    /// The connection was re-keyed by its caller: it needs no settling.
    /// O(log n).
    pub(crate) fn untouch(&mut self, handle: ConnectionHandle) {
        if let Some(slot) = self.map.get_mut(&handle) {
            slot.touched = false;
        }
    }

    /// Settle every touched connection, and re-read the deadline of those
    /// settled for the queues only. What the timer's readers call
    /// (`poll_timeout`, `handle_timeout`). O((touched + stale) · log n).
    pub(crate) fn settle(&mut self) {
        // The queues as `settle_queues` fills them; every connection it
        // settled is then stale and re-keyed below with the others (the
        // timers are ordered by (deadline, handle), so the order of the
        // re-keying does not matter).
        self.settle_queues();
        let mut stale = std::mem::take(&mut self.stale_timers);
        for h in stale.drain(..) {
            let Some(slot) = self.map.get_mut(&h) else {
                continue;
            };
            if !slot.timer_stale {
                continue;
            }
            slot.timer_stale = false;
            let t = slot.conn.poll_timeout();
            self.timers.rearm(h, slot.armed, t);
            slot.armed = t;
        }
        if self.stale_timers.is_empty() {
            self.stale_timers = stale;
        }
    }

    /// Settle every touched connection for the transmit and event queues
    /// only — queued exactly as [`settle`](Self::settle) queues them — and
    /// leave its deadline stale until the next `settle`. What the loops
    /// that do not read the timer call (`poll_transmit`, `poll_event`).
    /// O(touched · log n), no deadline computed.
    pub(crate) fn settle_queues(&mut self) {
        let mut touched = std::mem::take(&mut self.touched);
        for h in touched.drain(..) {
            let Some(slot) = self.map.get_mut(&h) else {
                continue;
            };
            if !slot.touched {
                continue;
            }
            settle_slot(
                slot,
                h,
                &mut self.stale_timers,
                &mut self.tx_ready,
                &mut self.ev_ready,
            );
        }
        if self.touched.is_empty() {
            self.touched = touched;
        }
    }

    /// The next connection that may have a datagram to send, taken off
    /// the transmit queue (put it back with [`requeue_tx`](Self::requeue_tx)
    /// if it sent one). Amortized O(log n).
    pub(crate) fn pop_tx(&mut self) -> Option<ConnectionHandle> {
        while let Some(h) = self.tx_ready.pop_front() {
            if let Some(slot) = self.map.get_mut(&h) {
                slot.in_tx = false;
                self.visited += 1;
                return Some(h);
            }
        }
        None
    }

    /// [`settle_queues`](Self::settle_queues) then [`pop_tx`](Self::pop_tx)
    /// in the case of a bulk sender — one connection sending datagram after
    /// datagram, the only one queued and the only one touched since the
    /// last settle — done on that connection alone, leaving the set
    /// exactly as the two calls would (issue 36: the queues' bookkeeping
    /// per burst, not per datagram). `None` in any other case: the caller
    /// then settles and pops. O(log n) (one lookup).
    pub(crate) fn pop_tx_alone(&mut self) -> Option<ConnectionHandle> {
        let (&h, 1) = (self.tx_ready.front()?, self.tx_ready.len()) else {
            return None;
        };
        if self.touched.iter().any(|t| *t != h) || self.touched.len() > 1 {
            return None;
        }
        let slot = self.map.get_mut(&h)?;
        // What `settle_queues` does for it (it is in `tx_ready` already).
        if self.touched.pop().is_some() && slot.touched {
            settle_slot(
                slot,
                h,
                &mut self.stale_timers,
                &mut self.tx_ready,
                &mut self.ev_ready,
            );
        }
        // What `pop_tx` does.
        self.tx_ready.pop_front();
        slot.in_tx = false;
        self.visited += 1;
        Some(h)
    }

    /// Put a connection that just sent at the back of the transmit queue.
    /// O(log n).
    pub(crate) fn requeue_tx(&mut self, handle: ConnectionHandle) {
        if let Some(slot) = self.map.get_mut(&handle) {
            if !slot.in_tx {
                slot.in_tx = true;
                self.tx_ready.push_back(handle);
            }
        }
    }

    /// The first connection on the event queue (it stays there until
    /// [`done_ev`](Self::done_ev)). Amortized O(log n).
    pub(crate) fn front_ev(&mut self) -> Option<ConnectionHandle> {
        while let Some(&h) = self.ev_ready.front() {
            if self.map.contains_key(&h) {
                self.visited += 1;
                return Some(h);
            }
            self.ev_ready.pop_front();
        }
        None
    }

    /// The front connection of the event queue has no event to report
    /// now: take it off. O(log n).
    pub(crate) fn done_ev(&mut self) {
        if let Some(h) = self.ev_ready.pop_front() {
            if let Some(slot) = self.map.get_mut(&h) {
                slot.in_ev = false;
            }
        }
    }

    /// Take off a connection whose deadline is at or before `now`
    /// (earliest first). O(log n).
    pub(crate) fn pop_due(&mut self, now: peregrine_cc::Time) -> Option<ConnectionHandle> {
        let h = self.timers.pop_due(now)?;
        if let Some(slot) = self.map.get_mut(&h) {
            slot.armed = None;
        }
        Some(h)
    }

    /// Count a connection visited by a loop other than the queues'.
    pub(crate) fn visit(&mut self) {
        self.visited += 1;
    }
}

/// Settle touched connection `h` (its `slot`) for the queues: its
/// deadline marked stale, queued to transmit and, with events, to
/// deliver them — what [`ConnectionSet::settle_queues`] does for each
/// touched connection and [`ConnectionSet::pop_tx_alone`] for its one.
/// O(1).
fn settle_slot(
    slot: &mut Slot,
    h: ConnectionHandle,
    stale_timers: &mut Vec<ConnectionHandle>,
    tx_ready: &mut VecDeque<ConnectionHandle>,
    ev_ready: &mut VecDeque<ConnectionHandle>,
) {
    slot.touched = false;
    if !slot.timer_stale {
        slot.timer_stale = true;
        stale_timers.push(h);
    }
    if !slot.in_tx {
        slot.in_tx = true;
        tx_ready.push_back(h);
    }
    if !slot.in_ev && slot.conn.has_events() {
        slot.in_ev = true;
        ev_ready.push_back(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::ConnectionConfig;
    use peregrine_cc::Time;

    fn conn(id: u16) -> Connection {
        Connection::connect(
            Time::ZERO,
            ConnectionConfig::default(),
            id,
            "10.0.0.2:4000".parse().unwrap(),
            1,
            1,
        )
    }

    /// What the queues hold, for comparing two sets.
    fn snapshot(s: &ConnectionSet) -> String {
        let slots: Vec<_> = s
            .map
            .iter()
            .map(|(h, sl)| {
                (
                    h.0,
                    sl.touched,
                    sl.in_tx,
                    sl.in_ev,
                    sl.timer_stale,
                    sl.armed,
                )
            })
            .collect();
        format!(
            "{slots:?} tx {:?} ev {:?} stale {:?} touched {:?} visited {}",
            s.tx_ready, s.ev_ready, s.stale_timers, s.touched, s.visited
        )
    }

    proptest::proptest! {
        /// Whenever `pop_tx_alone` answers, it hands out the connection
        /// `settle_queues` + `pop_tx` would and leaves the set as they
        /// would; whenever it declines, nothing changed. Random touches,
        /// untouches, requeues, pops and settles on a few connections.
        #[test]
        fn pop_tx_alone_is_settle_and_pop(
            ops in proptest::collection::vec((0u8..6, 0u64..4), 1..60),
        ) {
            let mut a = ConnectionSet::default();
            for i in 0..4u64 {
                a.insert(ConnectionHandle(i), conn(i as u16 + 1), None);
            }
            for (op, i) in ops {
                let h = ConnectionHandle(i);
                match op {
                    0 => {
                        a.get_mut(&h);
                    }
                    1 => a.untouch(h),
                    2 => a.requeue_tx(h),
                    3 => {
                        a.pop_tx();
                    }
                    4 => a.settle(),
                    _ => {
                        // The two ways, on copies of the same state.
                        let mut b = ConnectionSet::default();
                        std::mem::swap(&mut a, &mut b);
                        let before = snapshot(&b);
                        let mut slow = clone_set(&b);
                        let fast = b.pop_tx_alone();
                        match fast {
                            Some(got) => {
                                slow.settle_queues();
                                proptest::prop_assert_eq!(slow.pop_tx(), Some(got));
                                proptest::prop_assert_eq!(snapshot(&b), snapshot(&slow));
                            }
                            None => proptest::prop_assert_eq!(snapshot(&b), before),
                        }
                        a = b;
                    }
                }
            }
        }
    }

    /// A copy of `s` (connections rebuilt alike: they are fresh here).
    fn clone_set(s: &ConnectionSet) -> ConnectionSet {
        let mut c = ConnectionSet::default();
        for (h, sl) in &s.map {
            c.map.insert(
                *h,
                Slot {
                    conn: Box::new(conn(h.0 as u16 + 1)),
                    peer: sl.peer,
                    touched: sl.touched,
                    in_tx: sl.in_tx,
                    in_ev: sl.in_ev,
                    armed: sl.armed,
                    timer_stale: sl.timer_stale,
                },
            );
            c.timers.rearm(*h, None, sl.armed);
        }
        c.touched = s.touched.clone();
        c.stale_timers = s.stale_timers.clone();
        c.tx_ready = s.tx_ready.clone();
        c.ev_ready = s.ev_ready.clone();
        c.visited = s.visited;
        c
    }

    #[test]
    fn only_touched_connections_are_queued_and_each_once() {
        let mut s = ConnectionSet::default();
        for i in 0..10u64 {
            s.insert(ConnectionHandle(i), conn(i as u16 + 1), None);
        }
        s.settle();
        // Every new connection has its START to send and a deadline.
        assert_eq!(s.timers.len(), 10);
        let mut popped = Vec::new();
        while let Some(h) = s.pop_tx() {
            popped.push(h.0);
        }
        assert_eq!(popped, (0..10).collect::<Vec<_>>());
        // Touching one (twice) queues it once; the others stay out.
        s.get_mut(&ConnectionHandle(7));
        s.get_mut(&ConnectionHandle(7));
        s.settle();
        assert_eq!(s.pop_tx(), Some(ConnectionHandle(7)));
        assert_eq!(s.pop_tx(), None);
        // A connection that sent goes to the back; untracked access and
        // untouch leave the queue alone.
        s.requeue_tx(ConnectionHandle(3));
        s.requeue_tx(ConnectionHandle(3));
        assert_eq!(s.pop_tx(), Some(ConnectionHandle(3)));
        assert_eq!(s.pop_tx(), None);
        s.get_mut(&ConnectionHandle(4));
        s.untouch(ConnectionHandle(4));
        s.settle();
        assert_eq!(s.pop_tx(), None);
        // A removed connection's queue entry and timer go with it.
        s.get_mut(&ConnectionHandle(5));
        s.settle();
        assert!(s.remove(&ConnectionHandle(5)).is_some());
        assert_eq!(s.pop_tx(), None);
        assert_eq!(s.timers.len(), 9);
        assert_eq!(s.len(), 9);
        assert_eq!(s.front_ev(), None, "no connection has events");
    }
}
