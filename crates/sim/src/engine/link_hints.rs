//! Hints announcing a point-to-point link's outages (`links.N.hints`,
//! issue 38): the plan `peregrine emu --hint-lead` runs
//! ([`HintPlan`](crate::world::hint_plan::HintPlan)), its hints handed to
//! the senders of the flows whose path crosses the link.
//!
//! A plan is read lazily: one event per planned hint, at the instant its
//! outage begins (the runtime's hint pump holds a hint until then too),
//! so the work is O(hints) and the memory O(links with hints).

use super::{Ev, Sim, SimError};
use crate::scenario::model::LinkSpec;
use crate::world::hint_plan::{HintPlan, OutageSource, PlannedHint};

/// One link's plan and the flows it concerns.
pub(crate) struct LinkHints {
    plan: HintPlan,
    /// Flows whose forward path crosses the link (either direction).
    flows: Vec<usize>,
    /// The plan's next hint, scheduled as `Ev::PlannedHint`.
    next: Option<PlannedHint>,
}

/// The plans of `links` (those with `hints`), for flows with the given
/// forward paths (link directions `2 · link + dir`). O(links + flows ·
/// path length).
pub(crate) fn plans(links: &[LinkSpec], paths: &[&[usize]], seed: u64) -> Vec<LinkHints> {
    let mut out = Vec::new();
    for (i, l) in links.iter().enumerate() {
        let Some(opts) = &l.hints else { continue };
        let dirs: Vec<OutageSource> = l
            .dirs
            .iter()
            .zip(["up", "down"])
            .map(|(d, name)| OutageSource {
                config: d.outages.clone(),
                seed,
                // The link model's own generator (`engine::build`): the
                // plan's windows are the ones the link goes down in.
                rng_name: format!("link/{}/{name}/outage", l.name),
            })
            .collect();
        let plan = HintPlan::new(opts.clone(), &dirs, seed, &format!("link/{}/hints", l.name));
        let flows = paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.iter().any(|d| d / 2 == i))
            .map(|(f, _)| f)
            .collect();
        out.push(LinkHints {
            plan,
            flows,
            next: None,
        });
    }
    out
}

impl LinkHints {
    /// Take the plan's next hint; when it is due (its outage's start),
    /// or `None` when the plan has no more.
    pub(crate) fn advance(&mut self) -> Option<peregrine_cc::Time> {
        self.next = self.plan.next_hint();
        self.next.as_ref().map(|h| h.starts)
    }
}

impl Sim {
    /// The first hint of every plan, scheduled. O(plans).
    pub(crate) fn schedule_link_hints(&mut self) {
        for k in 0..self.link_hints.len() {
            self.schedule_next_hint(k);
        }
    }

    fn schedule_next_hint(&mut self, k: usize) {
        if let Some(at) = self.link_hints[k].advance() {
            if at <= self.end {
                self.queue.push(at, Ev::PlannedHint(k));
            }
        }
    }

    /// Plan `k`'s hint is due: every flow crossing the link gets it, and
    /// the plan's next is scheduled. O(flows of the link).
    pub(crate) fn planned_hint(&mut self, k: usize) -> Result<(), SimError> {
        let Some(h) = self.link_hints[k].next.take() else {
            return Ok(());
        };
        let hint = h.link_hint();
        for i in 0..self.link_hints[k].flows.len() {
            let f = self.link_hints[k].flows[i];
            self.deliver_hint(f, &hint)?;
        }
        self.schedule_next_hint(k);
        Ok(())
    }
}
