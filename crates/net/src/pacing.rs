//! # Pacing finer than a millisecond (issue 35)
//!
//! The core's pacer (`peregrine_proto::recovery::pacer`) can release a
//! paced sender's datagrams in 1 ms bursts (the simulator's behaviour)
//! or one at a time at the rate ([`Pacing::Fine`]). The runtime resolves
//! `Pacing::Auto` to `Fine`, and its driver waits for the sub-millisecond
//! gaps on its own thread (`driver.rs`, `short_wait`). **The mechanism is
//! a timer, aimed early, with a short poll under a threshold**:
//!
//! * *Timer slack*: Linux lets a normal thread's timer fire up to 50 µs
//!   late (to batch wake-ups); the driver thread sets its slack to 1 µs
//!   (`PR_SET_TIMERSLACK`).
//! * *Wake-up lateness*: even so, a nap ends late — 15–75 µs on this
//!   project's VM (the hypervisor's wake-up latency), a large part of a
//!   98-µs gap at 100 Mbit/s. The driver's [`WakeTimer`](crate::wake)
//!   (policy [`WakePolicy::RUNTIME`](crate::wake::WakePolicy::RUNTIME))
//!   learns the running median of its naps' lateness and aims each nap
//!   early by it: a nap that ends as late as usual ends on time, at no
//!   CPU cost.
//! * *A short poll*: a nap that ended early leaves a rest; when it is at
//!   most 15 µs the driver polls it out (no system call), with at most
//!   5 ms of polling in every 50 ms — 10 % of a core, never a spinning
//!   core. Past that budget it naps to the deadline itself.
//! * *Credit for lateness*: a nap that ends late is not lost: the pacer's
//!   tokens keep accruing, and (fine pacing) the next release comes when
//!   the bucket holds one packet, so a few µs of lateness shorten the next
//!   gap instead of adding up to a back-to-back pair.
//!
//! Not `SO_TXTIME`: the kernel honours per-datagram departure times only
//! through the `fq` or `etf` queueing discipline on the egress device (and
//! one `sendmsg` control message per datagram, no GSO); this project's
//! kernel (and CI's) has neither (`CONFIG_NET_SCH_FQ`/`_ETF` not set), so
//! such a path could not be tested here. On kernels with `fq` it is the
//! mechanism that would meet 500 Mbit/s (20-µs gaps) without polling.
//! Measured in docs/validation.md ("Pacing finer than a millisecond").

use peregrine_proto::{ConnectionConfig, Pacing};

/// The driver thread's timer slack, nanoseconds.
const TIMER_SLACK_NS: u64 = 1_000;

/// Resolve the runtime's choices in `config`: `Pacing::Auto` becomes
/// `Pacing::Fine`. O(1).
pub(crate) fn resolve(config: &mut ConnectionConfig) {
    if config.pacing == Pacing::Auto {
        config.pacing = Pacing::Fine;
    }
}

/// Give the calling thread (the driver's) a 1 µs timer slack, so its
/// sub-millisecond naps end on time. Best effort: elsewhere than Linux,
/// or if the kernel refuses, the default slack stays.
pub(crate) fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value and
    // touches only the calling thread's scheduling attributes.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_becomes_fine_and_explicit_choices_stay() {
        let mut c = ConnectionConfig::default();
        assert_eq!(c.pacing, Pacing::Auto);
        resolve(&mut c);
        assert_eq!(c.pacing, Pacing::Fine);
        let mut c = ConnectionConfig {
            pacing: Pacing::Coarse,
            ..ConnectionConfig::default()
        };
        resolve(&mut c);
        assert_eq!(c.pacing, Pacing::Coarse);
    }

    #[cfg(target_os = "linux")]
    #[test]
    // A thread of its own, as the driver's: the slack is per thread.
    #[allow(clippy::disallowed_methods)]
    fn the_slack_is_set() {
        std::thread::spawn(|| {
            tighten_timer_slack();
            // SAFETY: PR_GET_TIMERSLACK reads the calling thread's slack.
            let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            assert_eq!(slack as u64, TIMER_SLACK_NS);
        })
        .join()
        .expect("thread");
    }
}
