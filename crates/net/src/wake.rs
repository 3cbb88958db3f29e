//! # Waking on time at µs gaps: a timer that learns its own lateness
//!
//! A thread's timed sleep (`ppoll`, a futex wait, `nanosleep`) ends late:
//! on this project's 2-core VM by 15–75 µs (the hypervisor's wake-up
//! latency, not the timer slack, which the callers set to 1 µs or less).
//! That is most of a 98-µs gap at 100 Mbit/s and more than a 20-µs gap at
//! 500 Mbit/s. [`WakeTimer`] compensates: it learns how late the calling
//! thread's timed wake-ups come and tells the caller to sleep until a
//! **margin** before each deadline, then — only when the rest is short
//! and a CPU budget allows — to poll without sleeping until the deadline.
//!
//! One implementation, two users with different policies
//! ([`WakePolicy`]):
//!
//! * the emulator's forwarding threads (`peregrine_emu::forward`,
//!   [`WakePolicy::EMULATOR`]): a generous margin (1.5 × the mean
//!   lateness) polled out, half of each 50 ms window at most — the
//!   emulator is the measuring instrument and must write on time;
//! * the UDP runtime's driver (`crate::driver`, [`WakePolicy::RUNTIME`]):
//!   naps aimed early by the *median* lateness (no CPU cost: a wake-up
//!   that comes as late as usual comes on time), and polling only the
//!   last [`WakePolicy::max_poll_ns`] (15 µs) before a deadline, at most
//!   a tenth of each 50 ms window — an application's sender must not
//!   spin a core.
//!
//! The timer is pure arithmetic on nanosecond timestamps the caller
//! passes in (no clock, no system call), so it is tested without sleeping;
//! [`WakeTimer::calibrate`] is the one place that sleeps, through a
//! closure. Every method is O(1) and allocates nothing.

/// How a [`WakeTimer`] turns learnt lateness into sleeps and polls.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WakePolicy {
    /// Which estimate of the lateness the margin is, and how scaled.
    pub aim: Aim,
    /// The longest margin, and the longest lateness learnt: beyond it a
    /// late wake-up is a stall (a descheduled thread), not the timer's
    /// latency to compensate.
    pub max_margin_ns: u64,
    /// Poll (instead of sleeping) only when the deadline is at most this
    /// far away — and, entering the poll, at most the margin away (a nap
    /// shorter than the margin would end late anyway).
    pub max_poll_ns: u64,
    /// A sleep of `r` ns ends at least `r / long_sleep_div` before its
    /// deadline (up to the largest margin): a wake-up after a long idle
    /// spell comes later than the short ones the estimate learns from.
    /// `0`: no such rule.
    pub long_sleep_div: u64,
    /// The window over which polling is budgeted, ns.
    pub poll_window_ns: u64,
    /// Polling allowed in each window, ns (past it, sleep to the deadline
    /// itself until the window ends).
    pub poll_budget_ns: u64,
}

/// Which lateness estimate the margin follows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Aim {
    /// `num / den` × the moving average (gain 1/8) of the lateness: a
    /// margin that covers most wake-ups, to be polled out.
    MeanTimes {
        /// Numerator.
        num: u64,
        /// Denominator (at least 1).
        den: u64,
    },
    /// The running `percent`-quantile of the lateness (a stochastic
    /// estimate moving 10 ns × percent up, 10 ns × (100 − percent) down
    /// per wake-up): a nap aimed early by it ends before its deadline in
    /// `percent` % of cases (then a short poll) and at most a little late
    /// otherwise.
    Quantile {
        /// The quantile, 1–99.
        percent: u64,
    },
}

impl WakePolicy {
    /// The emulator's forwarding threads (docs/emulator.md, "Writing on
    /// time at µs gaps"): margin 1.5 × the mean lateness (at most 200 µs,
    /// at least 1/16 of a long sleep), polled out; polling at most half of
    /// every 50 ms window.
    pub const EMULATOR: WakePolicy = WakePolicy {
        aim: Aim::MeanTimes { num: 3, den: 2 },
        max_margin_ns: 200_000,
        max_poll_ns: 200_000,
        long_sleep_div: 16,
        poll_window_ns: 50_000_000,
        poll_budget_ns: 25_000_000,
    };

    /// The UDP runtime's driver (`crates/net/src/pacing.rs`): naps aimed
    /// early by the median lateness, polling only the last 15 µs, at most
    /// 5 ms of every 50 ms (10 % of a core).
    pub const RUNTIME: WakePolicy = WakePolicy {
        aim: Aim::Quantile { percent: 50 },
        max_margin_ns: 200_000,
        max_poll_ns: 15_000,
        long_sleep_div: 0,
        poll_window_ns: 50_000_000,
        poll_budget_ns: 5_000_000,
    };
}

/// When to sleep and for how long, from the lateness of the thread's own
/// timed wake-ups (module docs). The caller asks [`WakeTimer::timeout_ns`]
/// before each wait and reports each sleep that ended by its timeout with
/// [`WakeTimer::on_timed_wake`]. O(1) per call, no allocation.
#[derive(Clone, Debug)]
pub struct WakeTimer {
    policy: WakePolicy,
    /// Moving average of the lateness (gain 1/8), ns.
    late_avg_ns: u64,
    /// Running quantile of the lateness, ns.
    late_q_ns: u64,
    window_start_ns: u64,
    polled_in_window_ns: u64,
    polling_since_ns: Option<u64>,
    /// Total polling time, ns.
    pub polled_ns: u64,
    /// Timed wake-ups learnt from.
    pub timed_wakes: u64,
}

impl Default for WakeTimer {
    /// The emulator's policy (the first user).
    fn default() -> Self {
        WakeTimer::new(WakePolicy::EMULATOR)
    }
}

impl WakeTimer {
    /// A timer that has learnt nothing yet (margin 0).
    pub fn new(policy: WakePolicy) -> WakeTimer {
        WakeTimer {
            policy,
            late_avg_ns: 0,
            late_q_ns: 0,
            window_start_ns: 0,
            polled_in_window_ns: 0,
            polling_since_ns: None,
            polled_ns: 0,
            timed_wakes: 0,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &WakePolicy {
        &self.policy
    }

    /// The margin before a deadline at which sleeping stops, ns.
    pub fn margin_ns(&self) -> u64 {
        let m = match self.policy.aim {
            Aim::MeanTimes { num, den } => self.late_avg_ns * num / den.max(1),
            Aim::Quantile { .. } => self.late_q_ns,
        };
        m.min(self.policy.max_margin_ns)
    }

    /// The moving average of the learnt lateness, ns.
    pub fn mean_lateness_ns(&self) -> u64 {
        self.late_avg_ns
    }

    /// The margin for a sleep of `remaining_ns`: the learnt one, or the
    /// long-sleep share if larger.
    fn margin_for(&self, remaining_ns: u64) -> u64 {
        let long = remaining_ns
            .checked_div(self.policy.long_sleep_div)
            .unwrap_or(0)
            .min(self.policy.max_margin_ns);
        self.margin_ns().max(long)
    }

    /// The timeout at `now` for a deadline `due` (`None`: no deadline),
    /// in ns: `Some(0)` means poll without sleeping (or, at the deadline,
    /// act). O(1).
    pub fn timeout_ns(&mut self, now: u64, due: Option<u64>) -> Option<u64> {
        if now.saturating_sub(self.window_start_ns) >= self.policy.poll_window_ns {
            self.window_start_ns = now;
            self.polled_in_window_ns = 0;
        }
        let remaining = due.map(|d| d.saturating_sub(now));
        let may_poll = self.polled_in_window_ns < self.policy.poll_budget_ns;
        let enter_poll = self.margin_ns().min(self.policy.max_poll_ns);
        match remaining {
            Some(0) => {
                self.stop_polling(now);
                Some(0)
            }
            Some(r)
                if may_poll
                    && (r <= enter_poll
                        || (self.polling_since_ns.is_some() && r <= self.policy.max_poll_ns)) =>
            {
                let since = self.polling_since_ns.get_or_insert(now);
                let spent = now - *since;
                self.polled_in_window_ns += spent;
                self.polled_ns += spent;
                *since = now;
                Some(0)
            }
            Some(r) => {
                self.stop_polling(now);
                // Over budget: sleep to the deadline itself (waking early
                // would need polling). Otherwise aim early by the margin;
                // a nap shorter than the margin still ends late, but less.
                Some(if may_poll {
                    r.saturating_sub(self.margin_for(r)).max(1)
                } else {
                    r
                })
            }
            None => {
                self.stop_polling(now);
                None
            }
        }
    }

    fn stop_polling(&mut self, now: u64) {
        if let Some(since) = self.polling_since_ns.take() {
            let spent = now.saturating_sub(since);
            self.polled_in_window_ns += spent;
            self.polled_ns += spent;
        }
    }

    /// Learn one wake-up's lateness, ns (stalls beyond the largest margin
    /// are left out).
    fn learn(&mut self, late: u64) {
        if late > self.policy.max_margin_ns {
            return;
        }
        self.timed_wakes += 1;
        self.late_avg_ns = self.late_avg_ns - self.late_avg_ns / 8 + late / 8;
        if let Aim::Quantile { percent } = self.policy.aim {
            let p = percent.clamp(1, 99);
            if late > self.late_q_ns {
                self.late_q_ns += 10 * p;
            } else {
                self.late_q_ns = self.late_q_ns.saturating_sub(10 * (100 - p));
            }
        }
    }

    /// Measure the thread's wake-up lateness before any deadline needs
    /// it: `rounds` timed sleeps of 200 µs through `sleep_ns`, timed with
    /// `now_ns`, whose mean lateness (stalls left out) seeds the
    /// estimates. About `rounds` × 0.3 ms.
    pub fn calibrate(
        &mut self,
        rounds: u32,
        mut now_ns: impl FnMut() -> u64,
        mut sleep_ns: impl FnMut(u64),
    ) {
        const ASK_NS: u64 = 200_000;
        let (mut sum, mut n) = (0u64, 0u64);
        for _ in 0..rounds {
            let t0 = now_ns();
            sleep_ns(ASK_NS);
            let late = now_ns().saturating_sub(t0 + ASK_NS);
            if late <= self.policy.max_margin_ns {
                sum += late;
                n += 1;
            }
        }
        if let Some(avg) = sum.checked_div(n) {
            self.late_avg_ns = avg;
            self.late_q_ns = avg;
        }
    }

    /// A timed sleep of `asked_ns` that started at `slept_at` ended at
    /// `now`: if it ended by its timeout (not before), learn how late it
    /// came. Either way the sleep ended a margin before the deadline (or
    /// later): poll the rest if it is short. O(1).
    pub fn on_timed_wake(&mut self, slept_at: u64, asked_ns: u64, now: u64) {
        let end = slept_at + asked_ns;
        if now >= end {
            self.learn(now - end);
        }
        self.polling_since_ns.get_or_insert(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_timer_learns_its_lateness_and_polls_only_the_margin() {
        let mut t = WakeTimer::new(WakePolicy::EMULATOR);
        // Nothing learnt: sleep to a sixteenth before the deadline (the
        // long-sleep margin).
        assert_eq!(t.timeout_ns(0, Some(1_000_000)), Some(1_000_000 - 62_500));
        // After that sleep: poll until the deadline, then stop.
        t.on_timed_wake(0, 937_500, 940_000);
        assert_eq!(t.timeout_ns(950_000, Some(1_000_000)), Some(0));
        assert_eq!(t.timeout_ns(1_000_000, Some(1_000_000)), Some(0));
        assert_eq!(t.polled_ns, 60_000);
        t.polled_ns = 0;
        assert_eq!(t.timeout_ns(0, None), None);
        // Timed wake-ups that come 80 µs late.
        let mut now = 0;
        for _ in 0..64 {
            t.on_timed_wake(now, 500_000, now + 580_000);
            now += 580_000;
            // The deadline was reached when the thread woke.
            assert_eq!(t.timeout_ns(now, Some(now)), Some(0));
        }
        t.polled_ns = 0;
        let m = t.margin_ns();
        assert!((110_000..=120_000).contains(&m), "margin {m}");
        // Far from the deadline: sleep to the margin before it.
        assert_eq!(
            t.timeout_ns(now, Some(now + 1_000_000)),
            Some(1_000_000 - m)
        );
        // Within the margin: poll; the polling time is counted.
        assert_eq!(t.timeout_ns(now, Some(now + 50_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 30_000, Some(now + 50_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 50_000, Some(now + 50_000)), Some(0));
        assert_eq!(t.polled_ns, 50_000);
        // A stall is not the timer's latency.
        let before = t.margin_ns();
        t.on_timed_wake(0, 1_000, 5_000_000);
        assert_eq!(t.margin_ns(), before);
    }

    #[test]
    fn busy_polling_takes_at_most_half_of_each_window() {
        let mut t = WakeTimer::new(WakePolicy::EMULATOR);
        for i in 0..64 {
            let woke = i * 1_000_000 + 180_000;
            t.on_timed_wake(i * 1_000_000, 100_000, woke);
            assert_eq!(t.timeout_ns(woke, Some(woke)), Some(0));
        }
        t.polled_ns = 0;
        // A deadline always 10 µs away (a saturated fast link): poll
        // every µs for 200 ms.
        let start = 1_000_000_000u64;
        let mut slept = 0;
        for us in 0..200_000u64 {
            let now = start + us * 1_000;
            if t.timeout_ns(now, Some(now + 10_000)) != Some(0) {
                slept += 1;
            }
        }
        let share = t.polled_ns as f64 / 200e6;
        assert!(share <= 0.51, "polled {share}");
        assert!(share >= 0.45, "polled {share}");
        assert!(slept > 0);
    }

    /// Teach `t` wake-ups whose lateness cycles through `lates` (ns).
    fn teach(t: &mut WakeTimer, lates: &[u64], rounds: usize) {
        let mut now = 0;
        for i in 0..rounds {
            let late = lates[i % lates.len()];
            t.on_timed_wake(now, 100_000, now + 100_000 + late);
            now += 100_000 + late;
            // The deadline had come: the poll ends at once.
            t.timeout_ns(now, Some(now));
        }
    }

    #[test]
    fn the_runtime_aims_early_by_the_median_lateness() {
        let mut t = WakeTimer::new(WakePolicy::RUNTIME);
        // Nothing learnt: a nap is aimed at the deadline itself, and a
        // deadline closer than the (zero) margin is napped for, not
        // polled — no CPU before anything is known.
        assert_eq!(t.timeout_ns(0, Some(100_000)), Some(100_000));
        assert_eq!(t.timeout_ns(0, Some(5_000)), Some(5_000));
        assert_eq!(t.polled_ns, 0);
        // Wake-ups 20–30 µs late, with a rare 150-µs straggler and a
        // 5-ms stall: the median (25 µs) is learnt, not the mean.
        let lates = [20_000, 22_000, 25_000, 28_000, 30_000, 150_000, 5_000_000];
        teach(&mut t, &lates, 7_000);
        let m = t.margin_ns();
        assert!((23_000..=29_000).contains(&m), "margin {m}");
        // The stall was left out; the straggler pulls the mean up.
        assert!(t.mean_lateness_ns() > 35_000, "{}", t.mean_lateness_ns());
        t.polled_ns = 0;
        // A 98-µs pacing gap: nap for the gap less the margin.
        let now = 1_000_000_000;
        assert_eq!(t.timeout_ns(now, Some(now + 98_000)), Some(98_000 - m));
        // The nap ended as late as the median: on time — act, no poll.
        t.on_timed_wake(now, 98_000 - m, now + 98_000);
        assert_eq!(t.timeout_ns(now + 98_000, Some(now + 98_000)), Some(0));
        assert_eq!(t.polled_ns, 0);
        // A nap that ended 6 µs early: poll the rest, and count it.
        let now = now + 1_000_000;
        t.on_timed_wake(now - 92_000, 92_000 - m, now);
        assert_eq!(t.timeout_ns(now, Some(now + 6_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 3_000, Some(now + 6_000)), Some(0));
        assert_eq!(t.timeout_ns(now + 6_000, Some(now + 6_000)), Some(0));
        assert_eq!(t.polled_ns, 6_000);
        // One that ended 60 µs early (more than the 15-µs poll limit):
        // nap again, aimed early, instead of polling 60 µs.
        let now = now + 1_000_000;
        t.on_timed_wake(now - 38_000, 38_000 - m, now);
        let m = t.margin_ns();
        assert_eq!(t.timeout_ns(now, Some(now + 60_000)), Some(60_000 - m));
        assert_eq!(t.polled_ns, 6_000);
        // A deadline 20 µs away (a 500 Mbit/s gap), shorter than the
        // margin but longer than the poll limit: the shortest nap, not a
        // 20-µs poll.
        assert_eq!(t.timeout_ns(now, Some(now + 20_000)), Some(1));
    }

    #[test]
    fn the_runtime_polls_at_most_a_tenth_of_each_window() {
        let mut t = WakeTimer::new(WakePolicy::RUNTIME);
        teach(&mut t, &[40_000], 10_000);
        let m = t.margin_ns();
        assert!((39_000..=41_000).contains(&m), "margin {m}");
        t.polled_ns = 0;
        // Every nap ends 14 µs early and the rest is polled in 1-µs
        // steps, for 1 s: 14 µs of every ~100 would be 14 %. (The
        // lateness is not taught here: the margin stays.)
        let mut now = 10_000_000_000u64;
        let end = now + 1_000_000_000;
        let mut late_gaps = 0;
        while now < end {
            let due = now + 100_000;
            let nap = t.timeout_ns(now, Some(due)).expect("a deadline");
            assert!(nap > 0, "far from the deadline: a nap");
            // The nap ends 14 µs before the deadline.
            now = due - 14_000;
            while now < due {
                match t.timeout_ns(now, Some(due)) {
                    Some(0) => now += 1_000,
                    Some(ns) => {
                        // Over budget: sleep to the deadline (late).
                        assert_eq!(ns, due - now);
                        now += ns + 40_000;
                        late_gaps += 1;
                    }
                    None => unreachable!("a deadline"),
                }
            }
            t.timeout_ns(now, Some(now));
        }
        let share = t.polled_ns as f64 / 1e9;
        assert!(share <= 0.105, "polled {share}");
        assert!(share >= 0.08, "polled {share}");
        assert!(late_gaps > 0, "the budget ran out in some windows");
    }

    #[test]
    fn an_early_return_is_not_learnt() {
        let mut t = WakeTimer::new(WakePolicy::RUNTIME);
        teach(&mut t, &[30_000], 5_000);
        let m = t.margin_ns();
        // Woken 50 µs into a 100-µs nap (a datagram, an application call).
        t.on_timed_wake(0, 100_000, 50_000);
        assert_eq!(t.margin_ns(), m);
        // A calibration seeds both estimates.
        let clock = std::cell::Cell::new(0u64);
        let mut c = WakeTimer::new(WakePolicy::RUNTIME);
        c.calibrate(4, || clock.get(), |ns| clock.set(clock.get() + ns + 12_000));
        assert_eq!((c.margin_ns(), c.mean_lateness_ns()), (12_000, 12_000));
    }
}
