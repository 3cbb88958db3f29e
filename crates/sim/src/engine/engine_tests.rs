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

/// Two links: `a`–`b` goes down for 200 ms at 1 s and 2 s (its hints on),
/// `c`–`d` carries a flow that never crosses it.
const HINTED_LINK: &str = r#"
duration = "3s"
seed = 5
[[links]]
a = "a"
b = "b"
rate = "10Mbps"
delay = "5ms"
outages = { scheduled = [ { start = "1s", end = "1200ms" }, { start = "2s", end = "2200ms" } ] }
hints = { lead = "100ms" }
[[links]]
a = "c"
b = "d"
rate = "10Mbps"
delay = "5ms"
[[flows]]
src = "a"
dst = "b"
cc = "rtwtcp"
[[flows.streams]]
app = "bulk"
[[flows]]
src = "c"
dst = "d"
[[flows.streams]]
app = "bulk"
"#;

#[test]
fn a_links_hints_reach_the_flows_that_cross_it_at_each_outage() {
    let s = Scenario::from_toml_str(HINTED_LINK, "t.toml", &[]).expect("valid");
    let mut sim = build::build(&s).expect("builds");
    sim.run().expect("runs");
    // One hint per outage, issued at its start with its length: what the
    // runtime's pump hands the controller from `peregrine emu`'s feed.
    assert_eq!(
        sim.metrics[0].hints,
        vec![
            (1_000_000_000, Some(200_000_000)),
            (2_000_000_000, Some(200_000_000))
        ]
    );
    assert!(sim.metrics[1].hints.is_empty(), "flow 1 never crosses a–b");
    // Every outage missed: no hints; the same seed gives the same run.
    let s = Scenario::from_toml_str(HINTED_LINK, "t.toml", &["links.0.hints.miss=1".into()])
        .expect("valid");
    let mut sim = build::build(&s).expect("builds");
    sim.run().expect("runs");
    assert!(sim.metrics[0].hints.is_empty());
}

#[test]
fn a_bad_hint_setting_names_its_key() {
    for (set, key) in [
        ("links.0.hints.miss=1.5", "links.0.hints.miss"),
        ("links.0.hints.false_alarm=-2", "links.0.hints.false_alarm"),
        ("links.0.hints.lead_ms=3", "lead_ms"),
    ] {
        let e = Scenario::from_toml_str(HINTED_LINK, "t.toml", &[set.into()])
            .expect_err(set)
            .to_string();
        assert!(e.contains(key), "{set}: {e}");
    }
}
