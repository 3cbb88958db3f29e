use super::*;
use crate::harness::config::{
    Corruption, CorruptionPattern, GilbertElliott, Jitter, Outage, PeriodicOutage, Reorder,
};

const MS: u64 = 1_000_000;

fn pipe(config: PipeConfig) -> Pipe {
    Pipe::new(config, 42, "test").unwrap()
}

fn t_ms(ms: u64) -> Time {
    Time::from_millis(ms)
}

/// Pops everything, in order, with `now` = each datagram's due time.
fn drain(p: &mut Pipe) -> Vec<Delivered> {
    let mut out = Vec::new();
    while let Some(at) = p.next_delivery() {
        out.push(p.pop_due(at).unwrap());
    }
    out
}

fn check_conservation(p: &Pipe) {
    let s = p.stats();
    assert_eq!(
        s.sent + s.duplicated,
        s.dropped.total() + s.delivered + p.in_flight() as u64,
        "{s:?}"
    );
}

#[test]
fn perfect_pipe_delivers_at_once_in_order() {
    let mut p = pipe(PipeConfig::default());
    for i in 0..10u8 {
        let out = p.push(t_ms(5), vec![i], Some(EcnCodepoint::Ect0));
        assert_eq!(out, PushOutcome::InFlight { copies: 1 });
    }
    assert_eq!(p.next_delivery(), Some(t_ms(5)));
    assert_eq!(p.pop_due(t_ms(4)), None, "nothing before its time");
    let got = drain(&mut p);
    assert_eq!(got.len(), 10);
    for (i, d) in got.iter().enumerate() {
        assert_eq!(d.datagram, vec![i as u8]);
        assert_eq!((d.sent_at, d.due_at), (t_ms(5), t_ms(5)));
        assert_eq!(d.ecn, Some(EcnCodepoint::Ect0));
        assert!(!d.corrupted && !d.duplicate && !d.held_back);
    }
    assert_eq!(p.stats().delivered_bytes, 10);
    check_conservation(&p);
}

#[test]
fn serialisation_time_rounds_up() {
    assert_eq!(serialisation_ns(1250, 1_000_000), 10 * MS);
    assert_eq!(serialisation_ns(1, 3), 2_666_666_667);
    assert_eq!(serialisation_ns(1500, 0), 0);
    assert_eq!(serialisation_ns(u64::MAX, 1), u64::MAX);
}

#[test]
fn rate_and_delay_add_up() {
    let mut p = pipe(PipeConfig {
        rate_bps: 1_000_000,
        delay_us: 20_000,
        ..Default::default()
    });
    for _ in 0..3 {
        p.push(Time::ZERO, vec![0; 1250], None);
    }
    let due: Vec<u64> = drain(&mut p).iter().map(|d| d.due_at.as_nanos()).collect();
    assert_eq!(due, [30 * MS, 40 * MS, 50 * MS]);
}

#[test]
fn queue_limit_counts_bytes_waiting_and_in_service() {
    let mut p = pipe(PipeConfig {
        rate_bps: 8_000_000, // 1000 bytes per ms
        queue_limit_bytes: Some(3_000),
        ..Default::default()
    });
    let outcomes: Vec<_> = (0..5)
        .map(|_| p.push(Time::ZERO, vec![0; 1000], None))
        .collect();
    assert_eq!(outcomes[2], PushOutcome::InFlight { copies: 1 });
    assert_eq!(outcomes[3], PushOutcome::Dropped(DropCause::QueueFull));
    // After 1 ms the first one is on the wire and out of the queue.
    assert_eq!(
        p.push(t_ms(1), vec![0; 1000], None),
        PushOutcome::InFlight { copies: 1 }
    );
    assert_eq!(
        p.push(t_ms(1), vec![0; 1], None),
        PushOutcome::Dropped(DropCause::QueueFull)
    );
    assert_eq!(p.stats().dropped.queue_full, 3);
    check_conservation(&p);
}

#[test]
fn outage_is_judged_when_transmission_would_start() {
    let mut p = pipe(PipeConfig {
        rate_bps: 8_000_000, // 1 ms per 1000 bytes
        delay_us: 50_000,
        outages: vec![Outage {
            start_us: 2_000,
            end_us: 4_000,
        }],
        ..Default::default()
    });
    // Starts at 0, 1 (delivered: on the wire before the outage), 2, 3
    // (dropped: their turn comes inside it); the next is pushed at 4.
    let outcomes: Vec<_> = (0..4)
        .map(|_| p.push(Time::ZERO, vec![0; 1000], None))
        .collect();
    assert_eq!(outcomes[1], PushOutcome::InFlight { copies: 1 });
    assert_eq!(outcomes[2], PushOutcome::Dropped(DropCause::Outage));
    assert_eq!(outcomes[3], PushOutcome::Dropped(DropCause::Outage));
    assert_eq!(
        p.push(t_ms(3), vec![0; 10], None),
        PushOutcome::Dropped(DropCause::Outage)
    );
    assert!(matches!(
        p.push(t_ms(4), vec![0; 10], None),
        PushOutcome::InFlight { .. }
    ));
    // The two sent before the outage arrive during it: they were in the air.
    let due: Vec<u64> = drain(&mut p).iter().map(|d| d.due_at.as_nanos()).collect();
    assert_eq!(due, [51 * MS, 52 * MS, 54 * MS + 10_000]);
}

#[test]
fn periodic_outage_windows() {
    let p = pipe(PipeConfig {
        periodic_outage: Some(PeriodicOutage {
            first_start_us: 1_000,
            period_us: 10_000,
            duration_us: 2_000,
        }),
        ..Default::default()
    });
    let down = |ms: u64| p.is_down_at(Time::from_micros(ms));
    assert!(!down(999));
    assert!(down(1_000) && down(2_999));
    assert!(!down(3_000) && !down(10_999));
    assert!(down(11_000) && down(1_000_001_500));
}

fn bits_differing(a: &[u8], b: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        for bit in 0..8 {
            if (x ^ y) & (0x80 >> bit) != 0 {
                out.push(i * 8 + bit);
            }
        }
    }
    out
}

#[test]
fn corruption_flips_exactly_k_distinct_bits() {
    for k in [1, 2, 3, 7, 64] {
        let mut p = pipe(PipeConfig {
            corruption: Some(Corruption {
                probability: 1.0,
                pattern: CorruptionPattern::Bits { count: k },
            }),
            ..Default::default()
        });
        for i in 0..200u32 {
            let original: Vec<u8> = (0..40).map(|j| (i * 7 + j) as u8).collect();
            p.push(Time::ZERO, original.clone(), None);
            let d = p.pop_due(Time::ZERO).unwrap();
            assert!(d.corrupted);
            assert_eq!(bits_differing(&original, &d.datagram).len(), k as usize);
        }
        assert_eq!(p.stats().corrupted, 200);
    }
    // A datagram shorter than k bits has all its bits flipped.
    let mut p = pipe(PipeConfig {
        corruption: Some(Corruption {
            probability: 1.0,
            pattern: CorruptionPattern::Bits { count: 20 },
        }),
        ..Default::default()
    });
    p.push(Time::ZERO, vec![0x0f], None);
    assert_eq!(p.pop_due(Time::ZERO).unwrap().datagram, vec![0xf0]);
    // Nothing to flip in an empty datagram: delivered, not counted.
    p.push(Time::ZERO, vec![], None);
    assert!(!p.pop_due(Time::ZERO).unwrap().corrupted);
}

#[test]
fn corruption_bursts_span_at_most_max_len() {
    let mut p = pipe(PipeConfig {
        corruption: Some(Corruption {
            probability: 1.0,
            pattern: CorruptionPattern::Burst { max_len_bits: 15 },
        }),
        ..Default::default()
    });
    let mut spans = [0u32; 16];
    for _ in 0..3_000 {
        p.push(Time::ZERO, vec![0xa5; 64], None);
        let d = p.pop_due(Time::ZERO).unwrap();
        let flipped = bits_differing(&[0xa5; 64], &d.datagram);
        let span = flipped.last().unwrap() - flipped[0] + 1;
        assert!((1..=15).contains(&span), "{flipped:?}");
        spans[span] += 1;
    }
    // Every length from 1 to 15 occurs (the span is the burst length:
    // both ends are always flipped).
    assert!(spans[1..=15].iter().all(|&n| n > 100), "{spans:?}");
}

#[test]
fn jitter_stays_in_bounds_and_keeps_order_unless_allowed() {
    for reorders in [false, true] {
        let mut p = pipe(PipeConfig {
            delay_us: 10_000,
            jitter: Jitter::Uniform { max_us: 5_000 },
            jitter_reorders: reorders,
            ..Default::default()
        });
        for i in 0..2_000u64 {
            p.push(Time::from_micros(i * 100), i.to_be_bytes().to_vec(), None);
        }
        let got = drain(&mut p);
        let seqs: Vec<u64> = got
            .iter()
            .map(|d| u64::from_be_bytes(d.datagram[..].try_into().unwrap()))
            .collect();
        let inversions = seqs.windows(2).filter(|w| w[1] < w[0]).count();
        for d in &got {
            let delay = d.due_at.as_nanos() - d.sent_at.as_nanos();
            // Order-keeping holds a datagram behind a slower predecessor,
            // which was sent earlier, so never past the bound either.
            assert!((10 * MS..=15 * MS).contains(&delay), "{delay}");
        }
        if reorders {
            assert!(inversions > 100, "{inversions}");
        } else {
            assert_eq!(inversions, 0);
        }
    }
}

#[test]
fn knobs_draw_from_independent_streams() {
    let lossy = PipeConfig {
        loss: 0.2,
        ..Default::default()
    };
    let busy = PipeConfig {
        duplicate: 0.3,
        jitter: Jitter::Normal {
            mean_us: 100.0,
            std_dev_us: 50.0,
        },
        reorder: Some(Reorder {
            probability: 0.1,
            extra_delay_us: 1_000,
        }),
        corruption: Some(Corruption::default()),
        ..lossy.clone()
    };
    let fates = |config: PipeConfig| {
        let mut p = pipe(config);
        (0..1_000)
            .map(|i| {
                p.push(Time::from_micros(i), vec![1; 8], None)
                    == PushOutcome::Dropped(DropCause::RandomLoss)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(fates(lossy), fates(busy));
}

#[test]
fn gilbert_elliott_long_run_loss_rate() {
    let mut p = pipe(PipeConfig {
        gilbert_elliott: Some(GilbertElliott {
            p_gb: 0.05,
            p_bg: 0.45,
            loss_good: 0.01,
            loss_bad: 0.8,
        }),
        ..Default::default()
    });
    let n = 100_000;
    for i in 0..n {
        p.push(Time::from_micros(i), vec![0], None);
    }
    // (0.05·0.8 + 0.45·0.01) / 0.5 = 0.089
    let rate = p.stats().dropped.burst_loss as f64 / n as f64;
    assert!((rate - 0.089).abs() < 0.006, "{rate}");
    check_conservation(&p);
}

#[test]
fn duplicates_carry_the_same_bits_and_count_once() {
    let mut p = pipe(PipeConfig {
        duplicate: 1.0,
        corruption: Some(Corruption {
            probability: 1.0,
            pattern: CorruptionPattern::Bits { count: 1 },
        }),
        ..Default::default()
    });
    assert_eq!(
        p.push(Time::ZERO, vec![0; 4], None),
        PushOutcome::InFlight { copies: 2 }
    );
    let got = drain(&mut p);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].datagram, got[1].datagram);
    assert_eq!((got[0].duplicate, got[1].duplicate), (false, true));
    assert_eq!((p.stats().duplicated, p.stats().corrupted), (1, 1));
    check_conservation(&p);
}

#[test]
fn reconfiguring_keeps_datagrams_in_flight_and_time_never_goes_back() {
    let mut p = pipe(PipeConfig {
        delay_us: 10_000,
        ..Default::default()
    });
    p.push(t_ms(5), vec![1], None);
    p.set_config(PipeConfig {
        loss: 1.0,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        p.push(t_ms(6), vec![2], None),
        PushOutcome::Dropped(DropCause::RandomLoss)
    );
    assert!(p
        .set_config(PipeConfig {
            loss: 2.0,
            ..Default::default()
        })
        .is_err());
    p.set_config(PipeConfig::default()).unwrap();
    // An earlier `now` is taken as the previous push's time; without
    // `jitter_reorders` it waits behind the one still in flight.
    p.push(t_ms(1), vec![3], None);
    let got = drain(&mut p);
    assert_eq!((got[0].datagram[0], got[0].due_at), (1, t_ms(15)));
    assert_eq!((got[1].datagram[0], got[1].sent_at), (3, t_ms(6)));
    assert_eq!(got[1].due_at, t_ms(15));
    check_conservation(&p);
}

#[test]
fn normal_jitter_with_zero_deviation_is_a_fixed_extra_delay() {
    let mut p = pipe(PipeConfig {
        jitter: Jitter::Normal {
            mean_us: 250.0,
            std_dev_us: 0.0,
        },
        jitter_reorders: true,
        ..Default::default()
    });
    for i in 0..100 {
        p.push(Time::from_micros(i * 10), vec![0], None);
    }
    assert!(drain(&mut p)
        .iter()
        .all(|d| d.due_at.as_nanos() - d.sent_at.as_nanos() == 250_000));
}
