//! The committed `endpoint` seeds replay through the fuzz driver with every
//! invariant holding (on stable, without libFuzzer: `cargo test` in `fuzz/`),
//! and a few hand-made scripts show the checks are live.

use peregrine_fuzz::ops::{Op, Script};
use peregrine_fuzz::world::{World, CLIENT, MAX_SERVER_CONNECTIONS, MODES, SERVER};
use peregrine_proto::ConnectionState;
use std::path::PathBuf;

#[test]
fn committed_endpoint_seeds_pass_the_invariants() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/endpoint");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("corpus/endpoint exists (fuzz/gen-corpus.sh)") {
        let path = e.expect("readable corpus entry").path();
        // Only the committed seeds (libFuzzer's additions may be there too).
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
        {
            continue;
        }
        let bytes = std::fs::read(&path).expect("readable seed");
        World::run(&bytes);
        n += 1;
    }
    assert!(n >= 2 * MODES.len(), "only {n} seeds in {}", dir.display());
}

#[test]
fn every_mode_connects_and_delivers_the_setup_messages() {
    for m in 0..MODES.len() as u8 {
        let w = World::connected(m);
        assert_eq!(
            (w.delivered_on_pair(SERVER), w.delivered_on_pair(CLIENT)),
            (2, 1)
        );
        assert!(!w.captured().is_empty());
    }
}

#[test]
fn a_start_flood_stops_at_the_connection_cap() {
    for m in 0..MODES.len() as u8 {
        let ops = (0..40u8)
            .map(|i| Op::Replay {
                index: 0,
                from: 3 + 4 * i,
            })
            .collect();
        let w = World::run(&Script { mode: m, ops }.encode());
        assert!(w.server_connections() <= MAX_SERVER_CONNECTIONS);
    }
}

#[test]
fn random_inputs_run_clean() {
    // A cheap stand-in for a fuzz run, so `cargo test` exercises the
    // decoder of arbitrary bytes too.
    let mut x = 0x1234_5678_9abc_def0u64;
    for _ in 0..40 {
        let data: Vec<u8> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        World::run(&data);
    }
}

#[test]
fn forge_makes_packets_an_insecure_server_accepts_and_a_psk_server_rejects() {
    // FIN + REMOTE_RESET with the ids and SYNC_NO of the last datagram the
    // server received: insecure mode has no defence (the op is live), the
    // PSK mode drops and counts it.
    for m in 0..2u8 {
        let mut w = World::connected(m);
        let index = w
            .captured()
            .iter()
            .rposition(|f| f.to == SERVER)
            .expect("the server received datagrams in the setup") as u16;
        let failures = w.endpoint_stats(SERVER).auth_failures;
        w.apply(&Op::Forge {
            index,
            kind: 3,
            from: 0,
            number: 9,
        });
        let state = w.pair_state(SERVER);
        if MODES[usize::from(m)].name == "insecure" {
            assert!(
                matches!(state, None | Some(ConnectionState::Closed)),
                "{state:?}"
            );
        } else {
            assert_eq!(state, Some(ConnectionState::Connected));
            assert_eq!(w.endpoint_stats(SERVER).auth_failures, failures + 1);
        }
    }
}
