//! The sending side of ECN (docs/protocol.md §6.5.3): which codepoint the
//! connection's packets carry, and the validation of the peer's ECN
//! counts (RFC 9000 §13.4.2, adapted to SLTP's DATA packets).
//!
//! While ECN is on, every DATA packet leaves with the controller's ECT
//! codepoint (classic ECT(0), scalable ECT(1)). Each ACK that raises the
//! largest acknowledged packet number and carries the ECN section is
//! checked: no count may decrease; together they may not exceed the ECT
//! DATA packets sent; they must grow by at least the DATA packets this
//! ACK newly acknowledges (all of which were sent ECT), and only in the
//! codepoint sent or CE. An ACK that newly acknowledges ECT packets
//! without the section fails too (the peer or the path does not report
//! ECN). A failure turns ECN off for the path: packets leave not-ECT and
//! later counts are ignored, as RFC 9000 §13.4.2.2 does. Validated growth
//! of the CE count is the congestion signal.
//!
//! **Validation is per path** (RFC 9000 §13.4.2: a new path is validated
//! afresh, and a path that failed may be tried again): when the
//! connection migrates ([`EcnSender::restart_path`]), a failure is
//! forgotten and the new path's packets — those numbered from the
//! migration on — are checked by themselves. The counts stay cumulative
//! (one packet-number space), so the last validated counts remain the
//! baseline; the old path's packets still in flight count toward neither
//! side of the undercount rule (a bleaching old path must not fail the
//! clean new one, nor an old clean path's counts vouch for a new one).

use crate::wire::{AckEcnCounts, AckPayload};
use crate::EcnCodepoint;
use peregrine_cc::{EcnResponse, EcnSample};

/// Why ECN validation failed (the first reason is kept, for stats).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EcnFailure {
    /// ECT packets were newly acknowledged by an ACK without ECN counts.
    NotReported,
    /// A count went down.
    Decreased,
    /// The counts cover more packets than were sent ECT.
    ExceedsSent,
    /// The counts grew by less than the ECT packets newly acknowledged
    /// (a path that clears the codepoint).
    Undercounted,
    /// The other ECT codepoint than the one sent grew (remarking).
    WrongCodepoint,
}

impl EcnFailure {
    /// A short name for stats and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            EcnFailure::NotReported => "not_reported",
            EcnFailure::Decreased => "decreased",
            EcnFailure::ExceedsSent => "exceeds_sent",
            EcnFailure::Undercounted => "undercounted",
            EcnFailure::WrongCodepoint => "wrong_codepoint",
        }
    }
}

/// ECN counters of the sending side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EcnCounters {
    /// Times validation restarted on a new path (migrations).
    pub path_restarts: u64,
    /// DATA packets sent with an ECT codepoint.
    pub ect_packets_sent: u64,
    /// The peer's validated cumulative counts (the last accepted section).
    pub reported: AckEcnCounts,
    /// Why validation failed, if it did (ECN is then off for the path).
    pub failure: Option<EcnFailure>,
}

/// The ECN state of one sending direction.
#[derive(Clone, Debug)]
pub struct EcnSender {
    enabled: bool,
    largest_acked: Option<u64>,
    /// The current path's first packet number: validation counts only
    /// packets from here on.
    path_first_pn: u64,
    counters: EcnCounters,
}

impl EcnSender {
    /// A sender with ECN on (`enabled`) or off (`ConnectionConfig::ecn`).
    pub fn new(enabled: bool) -> EcnSender {
        EcnSender {
            enabled,
            largest_acked: None,
            path_first_pn: 0,
            counters: EcnCounters::default(),
        }
    }

    /// Whether packets are sent ECN-capable now (on and not failed).
    pub fn active(&self) -> bool {
        self.enabled && self.counters.failure.is_none()
    }

    /// The codepoint for this connection's datagrams, `None` when ECN is off
    /// or failed. O(1).
    pub fn codepoint(&self, response: EcnResponse) -> Option<EcnCodepoint> {
        self.active().then_some(match response {
            EcnResponse::Classic => EcnCodepoint::Ect0,
            EcnResponse::Scalable => EcnCodepoint::Ect1,
        })
    }

    /// The counters.
    pub fn counters(&self) -> &EcnCounters {
        &self.counters
    }

    /// A DATA packet left (ECT when active). O(1).
    pub fn on_data_sent(&mut self) {
        if self.active() {
            self.counters.ect_packets_sent += 1;
        }
    }

    /// The connection moved to a new path whose first packet will be
    /// `next_pn`: validate ECN there afresh (RFC 9000 §13.4.2), even if it
    /// failed on the old one. The validated counts stay the baseline.
    /// O(1).
    pub fn restart_path(&mut self, next_pn: u64) {
        self.path_first_pn = next_pn;
        self.counters.failure = None;
        self.counters.path_restarts += 1;
    }

    /// The current path's first packet number: [`on_ack`](Self::on_ack)
    /// wants the newly acknowledged packets numbered from here on.
    pub fn path_first_pn(&self) -> u64 {
        self.path_first_pn
    }

    fn fail(&mut self, why: EcnFailure) -> Option<EcnSample> {
        self.counters.failure = Some(why);
        None
    }

    /// Validate the ECN section of `ack`, which newly acknowledged
    /// `newly_acked` DATA packets of the current path (numbered from
    /// [`path_first_pn`](Self::path_first_pn) on, all sent ECT while
    /// validation holds) of `acked_bytes` bytes in all; the sample of
    /// what it newly reported, or `None` (nothing new, ignored, or a
    /// failure — which turns ECN off). `response` says which ECT was sent.
    /// O(1).
    pub fn on_ack(
        &mut self,
        ack: &AckPayload,
        newly_acked: u64,
        acked_bytes: u64,
        response: EcnResponse,
    ) -> Option<EcnSample> {
        if !self.active() {
            return None;
        }
        let Some(counts) = ack.ecn else {
            if newly_acked > 0 {
                return self.fail(EcnFailure::NotReported);
            }
            return None;
        };
        // Only an ACK that raises the largest acknowledged is newer than
        // the last one checked (ACKs may arrive reordered).
        if self.largest_acked.is_some_and(|l| ack.largest_acked <= l) {
            return None;
        }
        self.largest_acked = Some(ack.largest_acked);
        let last = self.counters.reported;
        if counts.ect0 < last.ect0 || counts.ect1 < last.ect1 || counts.ce < last.ce {
            return self.fail(EcnFailure::Decreased);
        }
        if counts.total() > self.counters.ect_packets_sent {
            return self.fail(EcnFailure::ExceedsSent);
        }
        let grew = counts.total() - last.total();
        if grew < newly_acked {
            return self.fail(EcnFailure::Undercounted);
        }
        let wrong = match response {
            EcnResponse::Classic => counts.ect1 > last.ect1,
            EcnResponse::Scalable => counts.ect0 > last.ect0,
        };
        if wrong {
            return self.fail(EcnFailure::WrongCodepoint);
        }
        self.counters.reported = counts;
        Some(EcnSample {
            newly_ect_packets: grew,
            newly_ce_packets: counts.ce - last.ce,
            acked_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(largest: u64, ecn: Option<(u64, u64, u64)>) -> AckPayload {
        AckPayload {
            largest_acked: largest,
            ecn: ecn.map(|(ect0, ect1, ce)| AckEcnCounts { ect0, ect1, ce }),
            ..AckPayload::default()
        }
    }

    fn sender(sent: u64) -> EcnSender {
        let mut s = EcnSender::new(true);
        for _ in 0..sent {
            s.on_data_sent();
        }
        s
    }

    const C: EcnResponse = EcnResponse::Classic;

    #[test]
    fn growth_of_ce_is_reported_once() {
        let mut s = sender(10);
        let a = s.on_ack(&ack(3, Some((3, 0, 1))), 4, 4000, C).unwrap();
        assert_eq!((a.newly_ect_packets, a.newly_ce_packets), (4, 1));
        // A reordered older ACK is ignored, not a failure.
        assert_eq!(s.on_ack(&ack(2, Some((2, 0, 1))), 0, 0, C), None);
        assert!(s.active());
        let a = s.on_ack(&ack(5, Some((5, 0, 1))), 2, 2000, C).unwrap();
        assert_eq!((a.newly_ect_packets, a.newly_ce_packets), (2, 0));
        assert_eq!(s.codepoint(C), Some(EcnCodepoint::Ect0));
        assert_eq!(s.codepoint(EcnResponse::Scalable), Some(EcnCodepoint::Ect1));
    }

    #[test]
    fn each_validation_rule_turns_ecn_off() {
        type Counts = Option<(u64, u64, u64)>;
        let cases: [(Counts, u64, EcnFailure); 4] = [
            (None, 1, EcnFailure::NotReported),
            (Some((11, 0, 0)), 1, EcnFailure::ExceedsSent),
            (Some((1, 0, 0)), 2, EcnFailure::Undercounted),
            (Some((1, 1, 0)), 2, EcnFailure::WrongCodepoint),
        ];
        for (counts, newly, why) in cases {
            let mut s = sender(10);
            assert_eq!(s.on_ack(&ack(4, counts), newly, 0, C), None);
            assert_eq!(s.counters().failure, Some(why));
            assert!(!s.active());
            assert_eq!(s.codepoint(C), None);
            // Off for good: later ACKs are not even looked at.
            assert_eq!(s.on_ack(&ack(9, Some((5, 0, 5))), 1, 0, C), None);
        }
        let mut s = sender(10);
        s.on_ack(&ack(3, Some((2, 0, 2))), 4, 0, C).unwrap();
        assert_eq!(s.on_ack(&ack(4, Some((3, 0, 1))), 0, 0, C), None);
        assert_eq!(s.counters().failure, Some(EcnFailure::Decreased));
    }

    #[test]
    fn off_sends_nothing_and_reads_nothing() {
        let mut s = EcnSender::new(false);
        s.on_data_sent();
        assert_eq!(s.counters().ect_packets_sent, 0);
        assert_eq!(s.codepoint(C), None);
        assert_eq!(s.on_ack(&ack(1, Some((1, 0, 1))), 1, 0, C), None);
        assert_eq!(s.counters().failure, None);
    }

    #[test]
    fn a_new_path_is_validated_afresh() {
        // Old path bleaches: ten ECT packets acknowledged without growth.
        let mut s = sender(10);
        s.on_ack(&ack(3, Some((4, 0, 0))), 4, 0, C).unwrap();
        assert_eq!(s.on_ack(&ack(9, Some((4, 0, 0))), 6, 0, C), None);
        assert_eq!(s.counters().failure, Some(EcnFailure::Undercounted));
        // Migration at packet 12 (10 and 11 left not-ECT).
        s.restart_path(12);
        assert!(s.active());
        assert_eq!(s.path_first_pn(), 12);
        assert_eq!(s.counters().path_restarts, 1);
        for _ in 0..5 {
            s.on_data_sent();
        }
        // Late ACK of old packets 10, 11 only (none of the new path's):
        // no growth owed, ECN stays on.
        let a = s.on_ack(&ack(11, Some((4, 0, 0))), 0, 0, C).unwrap();
        assert_eq!((a.newly_ect_packets, a.newly_ce_packets), (0, 0));
        assert!(s.active());
        // The new path's five packets, one CE: validated from the old
        // baseline, the CE is a signal.
        let a = s.on_ack(&ack(16, Some((8, 0, 1))), 5, 0, C).unwrap();
        assert_eq!((a.newly_ect_packets, a.newly_ce_packets), (5, 1));
        assert!(s.active());
    }

    #[test]
    fn an_ack_of_no_new_data_without_counts_is_fine() {
        let mut s = sender(3);
        assert_eq!(s.on_ack(&ack(0, None), 0, 0, C), None);
        assert!(s.active());
    }
}
