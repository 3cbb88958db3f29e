//! # Pacing finer than a millisecond (issue 35)
//!
//! The core's pacer (`peregrine_proto::recovery::pacer`) can release a
//! paced sender's datagrams in 1 ms bursts (the simulator's behaviour)
//! or one at a time at the rate ([`Pacing::Fine`]). The runtime resolves
//! `Pacing::Auto` to `Fine`, and its driver waits for the sub-millisecond
//! gaps on its own thread, parked in naps (`driver.rs`, `short_wait`) —
//! no spinning. What makes those naps precise is the thread's **timer
//! slack**: Linux lets a timer of a normal thread fire up to 50 µs late
//! (to batch wake-ups), which at 100 Mbit/s (116 µs per 1,452-byte
//! datagram) is 40 % of a gap; the driver thread sets its slack to 1 µs
//! (`PR_SET_TIMERSLACK`). The mechanism is a timer, not a busy-poll and
//! not `SO_TXTIME` (which needs the `fq` or `etf` queueing discipline on
//! the egress device, and one `sendmsg` control message per datagram):
//! a paced sender costs one wake-up per datagram — measured in
//! docs/validation.md ("Pacing finer than a millisecond").

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
