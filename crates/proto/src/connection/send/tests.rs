//! Unit tests of the sending side (`send/mod.rs`).
use super::*;

const CTX: SchedContext = SchedContext {
    now: Time::ZERO,
    cwnd_bytes: 0,
    srtt: None,
};

fn br(message: u32, block: u16) -> BlockRef {
    BlockRef {
        stream: 0,
        message,
        block,
    }
}

#[test]
fn fragmentation_cuts_fixed_blocks_and_one_for_empty() {
    let mut s = SendState::new(100);
    s.enqueue(Time::ZERO, 0, &[7u8; 250], None).unwrap();
    s.enqueue(Time::ZERO, 0, &[], None).unwrap();
    let f = s.frame(br(0, 2)).unwrap();
    assert_eq!((f.block_count, f.data.len()), (3, 50));
    assert!(f.is_end_of_message());
    let f = s.frame(br(1, 0)).unwrap();
    assert_eq!((f.block_count, f.data.len()), (1, 0));
}

#[test]
fn small_messages_coalesce_and_big_blocks_fill_packets() {
    let mut s = SendState::new(100);
    for _ in 0..5 {
        s.enqueue(Time::ZERO, 0, &[1u8; 10], None).unwrap();
    }
    // Room for 3 frames of 13 + 10 bytes.
    let t = s.take_frames(0, 3 * 23, &CTX).unwrap();
    assert_eq!(t.blocks, [br(0, 0), br(1, 0), br(2, 0)]);
    assert!(!t.retransmission);
    let t = s.take_frames(1, 1000, &CTX).unwrap();
    assert_eq!(t.blocks, [br(3, 0), br(4, 0)]);
    assert!(s.take_frames(2, 1000, &CTX).is_none());
}

#[test]
fn lost_blocks_are_retransmitted_first_and_acks_complete_messages() {
    let mut s = SendState::new(100);
    s.enqueue(Time::ZERO, 0, &[1u8; 150], None).unwrap();
    let a = s.take_frames(0, 113, &CTX).unwrap();
    let b = s.take_frames(1, 113, &CTX).unwrap();
    assert_eq!((a.blocks[0], b.blocks[0]), (br(0, 0), br(0, 1)));
    s.on_lost(Time::ZERO, &[(0, br(0, 0))]);
    // A stale loss report for a block re-sent since is ignored.
    let r = s.take_frames(2, 113, &CTX).unwrap();
    assert!(r.retransmission);
    s.on_lost(Time::ZERO, &[(0, br(0, 0))]);
    assert!(!s.has_retransmission());
    assert!(s.on_acked(&[br(0, 1)]).is_empty());
    assert_eq!(
        s.on_acked(&[br(0, 0)]),
        [MessageId {
            stream: 0,
            number: 0
        }]
    );
    assert_eq!(s.outstanding_messages(), 0);
    assert!(s.undelivered().is_empty());
}

#[test]
fn undelivered_runs_from_the_oldest_unacknowledged_message_on() {
    let mut s = SendState::new(100);
    for _ in 0..4 {
        s.enqueue(Time::ZERO, 0, &[1u8; 10], None).unwrap();
    }
    let t = s.take_frames(0, 1000, &CTX).unwrap();
    assert_eq!(t.blocks.len(), 4);
    let id = |number| MessageId { stream: 0, number };
    // Messages 0 and 2 acknowledged, 1 not: 2 and 3 cannot have been
    // delivered in order yet, so 1, 2 and 3 are all undelivered.
    s.on_acked(&[br(0, 0), br(2, 0)]);
    assert_eq!(s.outstanding_messages(), 2);
    assert_eq!(s.undelivered(), [id(1), id(2), id(3)]);
    s.on_acked(&[br(1, 0)]);
    assert_eq!(s.undelivered(), [id(3)]);
    s.on_acked(&[br(3, 0)]);
    assert!(s.undelivered().is_empty());
}

#[test]
fn peer_window_limits_new_data() {
    let mut s = SendState::new(100);
    s.enqueue(Time::ZERO, 0, &[1u8; 300], None).unwrap();
    s.set_peer_window(150);
    assert!(s.take_frames(0, 113, &CTX).is_some());
    assert!(s.take_frames(1, 113, &CTX).is_none());
    assert!(s.window_blocked());
    s.on_acked(&[br(0, 0)]);
    assert!(s.take_frames(1, 113, &CTX).is_some());
}

#[test]
fn deadline_abandons_and_queues_a_skip_frame_on_an_ordered_stream() {
    let mut s = SendState::new(100);
    let late = s
        .enqueue(Time::ZERO, 0, &[1u8; 150], Some(Time::from_millis(10)))
        .unwrap();
    s.enqueue(Time::ZERO, 0, b"next", None).unwrap();
    let first = s.take_frames(0, 113, &CTX).unwrap();
    assert_eq!(first.blocks, [br(0, 0)]);
    s.expire(Time::from_millis(10));
    assert_eq!(
        s.pop_abandoned(),
        Some((late, AbandonReason::DeadlineExpired))
    );
    assert_eq!(s.outstanding_messages(), 2, "message 1 and the skip");
    // The skip goes first, alone in a retransmission packet.
    let t = s.take_frames(1, 1000, &CTX).unwrap();
    assert!(t.retransmission);
    assert_eq!(
        t.blocks,
        [BlockRef {
            stream: 0,
            message: 0,
            block: SKIP_BLOCK
        }]
    );
    let f = s.frame(t.blocks[0]).unwrap();
    assert!(f.is_skip());
    assert_eq!(f.reliability, crate::wire::Reliability::Partial);
    let t = s.take_frames(2, 1000, &CTX).unwrap();
    assert_eq!(t.blocks, [br(1, 0)]);
    s.on_acked(&[
        BlockRef {
            stream: 0,
            message: 0,
            block: SKIP_BLOCK,
        },
        br(1, 0),
    ]);
    assert_eq!(s.outstanding_messages(), 0);
    // A late ACK of the abandoned block changes nothing.
    assert!(s.on_acked(&[br(0, 0)]).is_empty());
}

#[test]
fn an_abandoned_message_releases_its_own_cut_from_the_window() {
    let mut s = SendState::new(100);
    s.enqueue(Time::ZERO, 0, &[1u8; 300], Some(Time::from_millis(10)))
        .unwrap();
    let t = s.take_frames(0, 113, &CTX).unwrap();
    assert_eq!(t.blocks, [br(0, 0)]);
    assert_eq!(s.unacked_bytes, 100);
    // Path MTU discovery moves the cut; the message, partly sent, keeps
    // its own (blocks of 100 bytes).
    s.set_block_size(40);
    assert_eq!(s.frame(br(0, 1)).map(|f| f.data.len()), Some(100));
    // Abandoned: the 100 bytes in flight leave the peer-window count.
    s.expire(Time::from_millis(10));
    assert_eq!(s.unacked_bytes, 0);
}

#[test]
fn unreliable_loss_abandons_instead_of_retransmitting() {
    let mut s = SendState::new(100);
    s.configure(
        4,
        StreamConfig {
            reliability: StreamReliability::Unreliable,
            ..StreamConfig::default()
        },
    );
    let id = s.enqueue(Time::ZERO, 4, &[1u8; 50], None).unwrap();
    let t = s.take_frames(0, 1000, &CTX).unwrap();
    s.on_lost(Time::ZERO, &[(0, t.blocks[0])]);
    assert_eq!(s.pop_abandoned(), Some((id, AbandonReason::Lost)));
    // The receiver may hold part of it: a skip frame, not the data.
    let t = s.take_frames(1, 1000, &CTX).unwrap();
    assert_eq!(t.blocks[0].block, SKIP_BLOCK);
    assert!(s
        .take_specific(
            2,
            &[BlockRef {
                stream: 4,
                message: 0,
                block: 0
            }]
        )
        .is_empty());
}

#[test]
fn undelivered_on_an_unordered_stream_is_only_what_is_unacknowledged() {
    let mut s = SendState::new(100);
    s.configure(
        3,
        StreamConfig {
            reliability: StreamReliability::ReliableUnordered,
            ..StreamConfig::default()
        },
    );
    for _ in 0..3 {
        s.enqueue(Time::ZERO, 3, &[1u8; 10], None).unwrap();
    }
    let t = s.take_frames(0, 1000, &CTX).unwrap();
    assert_eq!(t.blocks.len(), 3);
    let b = |message| BlockRef {
        stream: 3,
        message,
        block: 0,
    };
    // Complete messages are delivered at once on an unordered stream:
    // only message 1 is missing at the peer.
    s.on_acked(&[b(0), b(2)]);
    assert_eq!(
        s.undelivered(),
        [MessageId {
            stream: 3,
            number: 1
        }]
    );
}

#[test]
fn abs_packs_the_most_urgent_stream_first() {
    let mut s = SendState::with_scheduler(100, SchedulerConfig::Abs);
    for (id, class) in [(1u16, 3u8), (2, 0)] {
        s.configure(
            id,
            StreamConfig {
                class,
                ..StreamConfig::default()
            },
        );
    }
    s.enqueue(Time::ZERO, 1, b"bulk", None).unwrap();
    s.enqueue(Time::ZERO, 2, b"cmd", None).unwrap();
    s.enqueue(Time::ZERO, 2, b"cmd2", None).unwrap();
    let t = s.take_frames(0, 1000, &CTX).unwrap();
    let streams: Vec<u16> = t.blocks.iter().map(|b| b.stream).collect();
    assert_eq!(streams, [2, 2, 1]);
    s.set_scheduler(SchedulerConfig::RoundRobin);
    assert_eq!(s.scheduler().name(), "rr");
}

#[test]
fn rr_fills_the_packet_with_the_head_streams_small_messages() {
    // Seed 002 Algorithm 1: the head stream fills the packet with all of
    // its data that fits, then goes to the back; the next stream gets what
    // room is left.
    let mut s = SendState::new(100);
    for _ in 0..6 {
        s.enqueue(Time::ZERO, 1, &[1u8; 10], None).unwrap();
    }
    s.enqueue(Time::ZERO, 2, &[2u8; 300], None).unwrap();
    for _ in 0..2 {
        s.enqueue(Time::ZERO, 3, &[3u8; 10], None).unwrap();
    }
    let streams = |t: &Taken| t.blocks.iter().map(|b| b.stream).collect::<Vec<u16>>();
    // Room for four 13 + 10 byte frames: all from the head stream (one
    // message per turn would have given stream 1 one frame, then stopped
    // at stream 2's 113-byte block).
    let t = s.take_frames(0, 4 * 23, &CTX).unwrap();
    assert_eq!(streams(&t), [1, 1, 1, 1]);
    // Stream 1 went to the back: stream 2's block fills the next packet.
    let t = s.take_frames(1, 113, &CTX).unwrap();
    assert_eq!(streams(&t), [2]);
    // Stream 3 empties its queue, stream 1 fills the rest with its last two
    // messages; stream 2's next block does not fit what is left.
    let t = s.take_frames(2, 113, &CTX).unwrap();
    assert_eq!(streams(&t), [3, 3, 1, 1]);
    // Stream 2 sent nothing in that packet: it keeps the head.
    let t = s.take_frames(3, 1000, &CTX).unwrap();
    let got: Vec<(u16, u16)> = t.blocks.iter().map(|b| (b.stream, b.block)).collect();
    assert_eq!(got, [(2, 1), (2, 2)]);
    assert!(s.take_frames(4, 1000, &CTX).is_none());
}

#[test]
fn send_room_fits_as_send_message_decides_and_wakes_at_a_third_free() {
    let room = |connection_bytes, stream_bytes, messages| SendRoom {
        open: true,
        connection_bytes,
        connection_limit_bytes: 16_000,
        stream_bytes,
        stream_limit_bytes: 9_000,
        messages,
        messages_limit: 30,
    };
    // Fits: each limit exactly reached, not passed.
    assert!(room(0, 8_000, 1).fits(1_000));
    assert!(!room(0, 8_001, 1).fits(1_000));
    assert!(room(15_000, 1, 1).fits(1_000));
    assert!(!room(15_001, 1, 1).fits(1_000));
    assert!(!room(0, 1, 30).fits(1));
    // A stream holding nothing takes a message above its own limit.
    assert!(room(0, 0, 0).fits(12_000));
    // The writer wakes only when every buffer is at most two thirds full
    // (stream 6,000 of 9,000; connection 10,667 of 16,000; 20 of 30).
    assert!(room(0, 6_000, 1).writer_may_wake(1_000));
    assert!(!room(0, 6_001, 1).writer_may_wake(1_000));
    assert!(room(10_667, 1, 1).writer_may_wake(1_000));
    assert!(!room(10_668, 1, 1).writer_may_wake(1_000));
    assert!(room(0, 1, 20).writer_may_wake(1_000));
    assert!(!room(0, 1, 21).writer_may_wake(1_000));
    // Never before the message itself fits (a large one), and always once
    // everything drained.
    assert!(!room(0, 1_000, 1).writer_may_wake(8_500));
    assert!(room(0, 0, 0).writer_may_wake(12_000));
    // A closed connection wakes its writer at once (to report it).
    let closed = SendRoom {
        open: false,
        ..room(16_000, 9_000, 30)
    };
    assert!(!closed.fits(1) && closed.writer_may_wake(1));
}

proptest::proptest! {
    /// `window_blocked`'s O(1) answer (a block of the largest size fits)
    /// agrees with the scan of every stream, and each stream's mirrors of
    /// `with_unsent` / `active` agree with the sets, through queuing,
    /// sending, losses, acknowledgements, credit, block-size changes and
    /// window changes.
    #[test]
    fn window_blocked_shortcut_matches_the_scan(
        ops in proptest::collection::vec((0u8..9, 0u32..4000, 0u16..3), 1..120)
    ) {
        let mut s = SendState::new(300);
        let mut sent: Vec<(u64, BlockRef)> = Vec::new();
        let mut pn = 0u64;
        for (op, x, stream) in ops {
            match op {
                0 | 1 => {
                    let _ = s.enqueue(Time::ZERO, stream, vec![0u8; x as usize], None);
                }
                2 => s.set_peer_window(u64::from(x)),
                3 => {
                    if let Some(t) = s.take_frames(pn, 200 + x as usize % 1400, &CTX) {
                        sent.extend(t.blocks.iter().map(|b| (pn, *b)));
                    }
                    pn += 1;
                }
                4 => {
                    let k = (x as usize).min(sent.len());
                    let done: Vec<(u64, BlockRef)> = sent.drain(..k).collect();
                    if x % 2 == 0 {
                        let blocks: Vec<BlockRef> = done.iter().map(|(_, b)| *b).collect();
                        s.on_acked(&blocks);
                    } else {
                        s.on_lost(Time::ZERO, &done);
                    }
                }
                5 => s.raise_credit(stream, x % 40),
                6 => s.set_initial_credit(Some(x % 20)),
                7 if x % 50 == 0 => {
                    s.clear();
                    sent.clear();
                }
                _ => s.set_block_size(50 + x as usize % 900),
            }
            proptest::prop_assert_eq!(s.window_blocked(), s.window_blocked_scan());
            // The streams' mirrors of `with_unsent` and `active`.
            for (id, st) in &s.streams {
                proptest::prop_assert_eq!(st.in_with_unsent, s.with_unsent.contains(id));
                proptest::prop_assert_eq!(st.in_active, s.active.contains(id));
            }
        }
    }
}
