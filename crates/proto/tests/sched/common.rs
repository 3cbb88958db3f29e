//! Two endpoints on the impairment harness, one connection, helpers to
//! drive an application on each side and collect what happened when.

#![allow(dead_code)]

use peregrine_cc::CcConfig;
use peregrine_proto::harness::{Harness, NodeId, PipeConfig};
use peregrine_proto::wire::StartupMode;
use peregrine_proto::{
    ConnectionConfig, ConnectionHandle, Endpoint, EndpointConfig, Event, SchedulerConfig, Time,
};
use std::net::SocketAddr;
use std::time::Duration;

pub fn addr(n: u8) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, n], 4000))
}

/// Seed 002 Fig. 6: 1 Mbit/s, 40 ms RTT, a drop-tail buffer of one BDP.
pub fn fig6_pipe() -> PipeConfig {
    PipeConfig {
        rate_bps: 1_000_000,
        delay_us: 20_000,
        queue_limit_bytes: Some(5_000),
        ..PipeConfig::default()
    }
}

/// CUBIC from slow start (no packet pair), the given scheduler.
pub fn cubic(scheduler: SchedulerConfig) -> ConnectionConfig {
    ConnectionConfig {
        cc: CcConfig::from_name("cubic").expect("registered"),
        startup: StartupMode::SlowStart,
        scheduler,
        ..ConnectionConfig::default()
    }
}

/// What the receiver got: (time, stream, message number, bytes).
pub type Delivery = (Time, u16, u32, Vec<u8>);

pub struct Pair {
    pub h: Harness<Endpoint>,
    pub a: NodeId,
    pub b: NodeId,
    pub conn: ConnectionHandle,
    pub delivered: Vec<Delivery>,
    /// Sender-side events other than `Connected` (time, event).
    pub sender_events: Vec<(Time, Event)>,
    pub connected: bool,
}

impl Pair {
    /// Node a connects to node b over `pipe` (both directions).
    pub fn new(pipe: PipeConfig, config: ConnectionConfig, seed: u64) -> Pair {
        let mut h = Harness::new(seed);
        h.set_default_pipe(pipe).expect("valid pipe");
        let ea = Endpoint::new(EndpointConfig::default(), seed);
        let eb = Endpoint::new(EndpointConfig::server(config.clone()), seed ^ 0xb);
        let a = h.add_node(addr(1), ea);
        let b = h.add_node(addr(2), eb);
        let conn = h
            .node_mut(a)
            .connect(Time::ZERO, addr(2), config)
            .expect("valid config");
        Pair {
            h,
            a,
            b,
            conn,
            delivered: Vec::new(),
            sender_events: Vec::new(),
            connected: false,
        }
    }

    pub fn now(&self) -> Time {
        self.h.now()
    }

    pub fn sender(&mut self) -> &mut Endpoint {
        self.h.node_mut(self.a)
    }

    /// Run until `t`, collecting events (at the time they were polled;
    /// polls happen at least every `step`).
    pub fn run_until(&mut self, t: Time, step: Duration) {
        while self.h.now() < t {
            let next = (self.h.now() + step).min(t);
            self.h.run_until(next).expect("harness");
            self.collect();
        }
    }

    pub fn collect(&mut self) {
        let now = self.h.now();
        while let Some((_, e)) = self.h.node_mut(self.b).poll_event() {
            if let Event::MessageReceived { stream, id, bytes } = e {
                self.delivered.push((now, stream, id.number, bytes));
            }
        }
        while let Some((_, e)) = self.h.node_mut(self.a).poll_event() {
            if e == Event::Connected {
                self.connected = true;
            } else {
                self.sender_events.push((now, e));
            }
        }
    }
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}
