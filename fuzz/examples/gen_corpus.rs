//! Writes the committed seed corpora from real runs (`fuzz/gen-corpus.sh`
//! calls this; run from anywhere: `cargo run --example gen_corpus` in `fuzz/`).
//!
//! * `corpus/endpoint/seed-<mode>-<name>`: hand-written attack scripts
//!   ([`Script`]) for each mode — a clean transfer, replays of every
//!   datagram of the handshake and the first exchange, bit flips and
//!   truncations, forged END / FIN / REMOTE_RESET / NACK / CWIN, captured
//!   datagrams re-sent from strangers, loss and reordering, abort, idle
//!   timeout, a START flood — each run once here to check it passes.
//! * `corpus/{datagram,header,<payload>}/seed-<mode>-<n>-<type>`: datagrams
//!   captured from the clean transfer (one of each packet type and
//!   direction), whole for `datagram` and `header`, their payload (bytes
//!   20..) for the payload decoder of their type (insecure mode only: a
//!   sealed payload is ciphertext).
//!
//! Existing `seed-*` files are replaced; other files are left alone.
use peregrine_fuzz::ops::{Op, Script};
use peregrine_fuzz::world::{World, CLIENT, MODES, SERVER};
use peregrine_proto::wire::{Header, HeaderRepr, PacketType};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn clean_transfer() -> Vec<Op> {
    let mut ops = Vec::new();
    for (i, len) in [100u16, 1_400, 3_000, 20, 4_500].into_iter().enumerate() {
        ops.push(Op::Send {
            side: (i % 2) as u8,
            stream: (i % 3) as u8,
            len,
        });
        ops.push(Op::Deliver { count: 255 });
        ops.push(Op::Advance { ms: 20 });
        ops.push(Op::Deliver { count: 255 });
    }
    ops.push(Op::Close { side: 0 });
    for _ in 0..4 {
        ops.push(Op::Deliver { count: 255 });
        ops.push(Op::Advance { ms: 250 });
    }
    ops
}

fn scripts(mode: u8, captured: usize) -> Vec<(&'static str, Vec<Op>)> {
    let n = captured.min(64) as u16;
    let send = |side| Op::Send {
        side,
        stream: 0,
        len: 800,
    };
    let flush = Op::Deliver { count: 255 };
    let mut out = vec![("transfer", clean_transfer())];

    let mut replay = Vec::new();
    for i in 0..n {
        replay.push(Op::Replay {
            index: i,
            from: (i % 4) as u8 * 3,
        });
    }
    replay.extend([
        send(0),
        flush.clone(),
        Op::Advance { ms: 100 },
        flush.clone(),
    ]);
    out.push(("replay", replay));

    let mut mutate = Vec::new();
    for i in 0..n.min(24) {
        // Header bytes (type, flags, checksum, ids, SYNC_NO) and payload.
        let pos = [4u16, 5, 6, 1, 3, 17, 18, 25, 40][usize::from(i) % 9];
        mutate.push(Op::Mutated {
            index: i,
            from: 0,
            flips: vec![(pos, 1 << (i % 8))],
            truncate: if i % 3 == 0 { 20 + i } else { 0 },
        });
    }
    mutate.extend([
        send(1),
        flush.clone(),
        Op::Advance { ms: 100 },
        flush.clone(),
    ]);
    out.push(("mutate", mutate));

    let mut forge = Vec::new();
    for kind in 0..9u8 {
        for index in [n.saturating_sub(1), n.saturating_sub(2)] {
            forge.push(Op::Forge {
                index,
                kind,
                from: 0,
                number: 1_000 + u32::from(kind),
            });
        }
        forge.extend([send(kind % 2), flush.clone()]);
    }
    forge.extend([Op::Advance { ms: 500 }, flush.clone()]);
    out.push(("forge", forge));

    let mut strangers = Vec::new();
    for i in 0..n.min(16) {
        strangers.push(Op::Replay {
            index: i,
            from: 3 + 4 * (i as u8 % 8),
        });
    }
    strangers.push(Op::Raw {
        to: SERVER as u8,
        from: 3,
        bytes: (0..64).collect(),
    });
    strangers.extend([send(0), flush.clone()]);
    out.push(("strangers", strangers));

    let mut loss = vec![
        send(0),
        send(1),
        Op::Send {
            side: 0,
            stream: 1,
            len: 4_000,
        },
    ];
    for _ in 0..3 {
        loss.extend([
            Op::DropNext,
            Op::Swap,
            Op::Deliver { count: 2 },
            Op::Advance { ms: 300 },
        ]);
    }
    loss.extend([flush.clone(), Op::Advance { ms: 1_000 }, flush.clone()]);
    out.push(("loss", loss));

    out.push((
        "abort",
        vec![
            send(0),
            flush.clone(),
            Op::Abort { side: 1 },
            flush.clone(),
            send(0),
            flush.clone(),
            Op::Advance { ms: 2_000 },
            flush.clone(),
        ],
    ));
    out.push((
        "idle",
        vec![send(1), Op::Advance { ms: 40_000 }, flush.clone()],
    ));

    let mut flood = Vec::new();
    for sel in 0..12u8 {
        flood.push(Op::Replay {
            index: 0,
            from: 3 + 4 * sel,
        });
    }
    flood.extend([Op::Advance { ms: 15_000 }, send(0), flush]);
    out.push(("start-flood", flood));
    let _ = mode;
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::write(dir.join(name), bytes)
}

/// The payload decoder target for a packet type (as fuzz/seed_corpus.py).
fn payload_target(t: PacketType) -> &'static str {
    match t {
        PacketType::Start => "start",
        PacketType::Reject => "reject",
        PacketType::Data => "data",
        PacketType::Ack => "ack",
        PacketType::Nack => "nack",
        PacketType::Echo | PacketType::Echo1 | PacketType::Echo2 => "echo",
        PacketType::Cwin => "cwin",
        PacketType::Join | PacketType::Leave => "group",
        _ => "bare",
    }
}

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for sub in [
        "endpoint", "datagram", "header", "start", "reject", "data", "ack", "nack", "echo", "cwin",
        "group", "bare",
    ] {
        if let Ok(rd) = fs::read_dir(root.join(sub)) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with("seed-") {
                    fs::remove_file(e.path())?;
                }
            }
        }
    }
    let mut files = 0;
    for (m, mode) in MODES.iter().enumerate() {
        let m = m as u8;
        let captured = World::connected(m).captured().len();
        for (name, ops) in scripts(m, captured) {
            let script = Script { mode: m, ops };
            let bytes = script.encode();
            // Each seed must pass the invariants as it is.
            World::run(&bytes);
            write(
                &root.join("endpoint"),
                &format!("seed-{}-{name}", mode.name),
                &bytes,
            )?;
            files += 1;
        }
        // Decoder seeds: one datagram per (type, direction) of a clean run.
        let mut w = World::connected(m);
        for op in clean_transfer() {
            w.apply(&op);
        }
        let mut seen = BTreeSet::new();
        for (i, f) in w.captured().iter().enumerate() {
            let Some(h) = Header::new_checked(&f.bytes[..])
                .ok()
                .and_then(|h| HeaderRepr::parse(&h).ok())
            else {
                continue;
            };
            // Later modes (Noise) add only their handshake packets, so the
            // datagram / header corpora stay under 50 files.
            if m >= 2 && !h.pk_type.is_handshake() {
                continue;
            }
            let dir = if f.to == CLIENT { "s2c" } else { "c2s" };
            if !seen.insert((h.pk_type as u8, dir)) {
                continue;
            }
            let name = format!("seed-{}-{i}-{dir}-{:?}", mode.name, h.pk_type).to_lowercase();
            write(&root.join("datagram"), &name, &f.bytes)?;
            write(&root.join("header"), &name, &f.bytes)?;
            files += 2;
            if mode.name == "insecure" || h.pk_type.is_handshake() {
                write(&root.join(payload_target(h.pk_type)), &name, &f.bytes[20..])?;
                files += 1;
            }
        }
    }
    println!("wrote {files} seed files under {}", root.display());
    Ok(())
}
