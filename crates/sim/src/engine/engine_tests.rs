use super::*;
use crate::scenario::Scenario;
use crate::world::link::LinkStats;
use peregrine_cc::{LinkHint, LinkHintKind};
use std::time::Duration;

const ONE_LINK: &str = r#"
duration = "1s"
seed = 3
[[links]]
a = "a"
b = "b"
rate = "10Mbps"
delay = "5ms"
queue = { packets = 100 }
[[flows]]
src = "a"
dst = "b"
cc = "rtwtcp"
[[flows.streams]]
app = "bulk"
"#;

/// A link that behaves like the wrapped one and, once, emits a blockage
/// hint for flow 0 when it first works at or after `at`.
struct Hinting {
    inner: Box<dyn LinkModel>,
    at: Time,
    sent: bool,
}

impl LinkModel for Hinting {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, DropReason)> {
        self.inner.enqueue(now, pkt)
    }
    fn next_wake(&mut self, now: Time) -> Option<Time> {
        self.inner.next_wake(now)
    }
    fn advance(&mut self, now: Time, out: &mut LinkOutput) {
        self.inner.advance(now, out);
        if !self.sent && now >= self.at {
            self.sent = true;
            let hint = LinkHint {
                kind: LinkHintKind::Blockage,
                issued_at: now,
                predicted_duration: Some(Duration::from_millis(150)),
                cqi: None,
                speed_mps: None,
            };
            out.hints.push((now + Duration::from_millis(1), 0, hint));
        }
    }
    fn backlog(&self) -> (u64, u64) {
        self.inner.backlog()
    }
    fn stats(&self) -> &LinkStats {
        self.inner.stats()
    }
}

fn final_mode(with_hint: bool) -> Option<&'static str> {
    let mut s = Scenario::from_toml_str(ONE_LINK, "t.toml", &[]).expect("valid");
    // The pro-active freeze on a hint is an extension (seed 004 holds on a loss).
    for f in &mut s.model.flows {
        f.cc = peregrine_cc::CcConfig::RtwTcp(
            peregrine_cc::algos::rtwtcp::RtwTcpConfig::with_extensions(),
        );
    }
    let mut sim = build::build(&s).expect("builds");
    if with_hint {
        let inner = std::mem::replace(
            &mut sim.links[0],
            Box::new(crate::world::link::PointToPoint::new(
                crate::world::link::Server::Rate(1),
                Duration::ZERO,
                crate::world::link::QueueLimit {
                    packets: Some(1),
                    bytes: None,
                    floor_packets: 0,
                },
                crate::world::loss::LossModel::new(
                    crate::scenario::model::LossSpec::None,
                    crate::rng::component_rng(0, "x"),
                ),
                crate::world::outage::Outages::none(),
            )),
        );
        sim.links[0] = Box::new(Hinting {
            inner,
            at: Time::from_millis(950),
            sent: false,
        });
    }
    sim.run().expect("runs");
    let c = sim.flows[0].client;
    let h = sim.slots[c].handle.expect("connected");
    sim.slots[c].ep.stats(h).expect("stats").controller_mode
}

#[test]
fn link_hints_reach_the_senders_controller() {
    assert_eq!(final_mode(false), Some("normal"));
    // RTW-TCP freezes for the predicted 150 ms: still frozen at the end (1 s).
    assert_eq!(final_mode(true), Some("frozen"));
}

#[test]
fn one_live_timer_event_per_endpoint() {
    let s = Scenario::from_toml_str(ONE_LINK, "t.toml", &[]).expect("valid");
    let mut sim = build::build(&s).expect("builds");
    sim.run().expect("runs");
    // Stale timer events are bounded: the queue left over at the end is
    // small (a few per endpoint and link), not one per re-arm.
    assert!(sim.queue.len() < 64, "{} events left", sim.queue.len());
}
