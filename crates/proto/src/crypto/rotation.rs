//! Connection-ID rotation (docs/security.md, "Connection-ID rotation").
//!
//! A protected server issues its client spare connection IDs inside the
//! encrypted channel (NEW_CONNECTION_ID, `wire::control`), each with a
//! **sequence** number k ≥ 1. A client that moves (`Endpoint::rebind`, or
//! the application's `Endpoint::rotate_connection_id`) switches to the
//! lowest unused sequence: it sends to the server's spare ID of k from a
//! fresh ID of its own, and the server answers to that ID — on that path
//! only. Every header field an observer could link is per sequence: the
//! two IDs, both SYNC_NOs (derived, 12 bits, never the previous
//! sequence's) and both directions' packet numbers (the wire carries the
//! real one plus a derived 32-bit offset, at least 2^24 away from the
//! previous sequence's). So a passive observer of the old and the new
//! path sees no shared ID, SYNC_NO or packet-number sequence.
//!
//! The connection itself never sees a rotated header: the seal rewrites
//! its plaintext header (the handshake's IDs, SYNC_NO and real packet
//! number) into the sequence's before sealing — the AEAD authenticates
//! what is on the wire — and the open rewrites it back after
//! authenticating. Everything above the crypto seam is unchanged.
//!
//! Derivation (both sides; `c2s`: what the client sends):
//!
//! ```text
//! PRK  = HKDF-Extract(salt = "peregrine v1 cid rotation",
//!                     IKM  = client secret[0] || server secret[0])
//! R[k] = HKDF-Expand(PRK, "peregrine v1 cid" || k (32-bit BE), 12)
//! pn_offset_c2s[k] = pn_offset_c2s[k-1] + 2^24 + (R[k][0..4]  mod (2^32 - 2^25))   (mod 2^32)
//! pn_offset_s2c[k] = pn_offset_s2c[k-1] + 2^24 + (R[k][4..8]  mod (2^32 - 2^25))   (mod 2^32)
//! sync_c2s[k] = R[k][8..10] & 0xfff, plus 1 (mod 4096) while equal to k-1's or 0's
//! sync_s2c[k] = R[k][10..12] & 0xfff, likewise
//! ```
//!
//! with sequence 0 the handshake's (offsets 0, each side's own SYNC_NO).
//! Retirement: once a packet of sequence k arrived, the IDs of lower
//! sequences are retired about three PTOs later (reordered packets still
//! open meanwhile); the endpoint then forgets the spare IDs, and a
//! packet addressed to a retired ID is dropped. The handshake's own ID
//! stays the connection's internal name until it closes, never again on
//! the wire.

use super::aead::Rewrite;
use peregrine_cc::Time;
use std::net::SocketAddr;

/// HKDF salt of the rotation key.
pub const ROTATION_SALT: &[u8] = b"peregrine v1 cid rotation";
/// HKDF info prefix of one sequence's values.
pub const ROTATION_LABEL: &[u8] = b"peregrine v1 cid";
/// The least distance between consecutive sequences' packet-number
/// offsets (mod 2^32), either way.
pub const PN_OFFSET_GAP: u32 = 1 << 24;
/// Peer addresses remembered with their sequence (server).
const MAX_ADDRS: usize = 8;

/// One sequence's derived header values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceMasks {
    /// Added to the real packet number of client-to-server packets.
    pub c2s_pn_offset: u32,
    /// Added to the real packet number of server-to-client packets.
    pub s2c_pn_offset: u32,
    /// The client's SYNC_NO in this sequence.
    pub c2s_sync: u16,
    /// The server's SYNC_NO in this sequence.
    pub s2c_sync: u16,
}

/// The rotation key from both directions' generation-0 traffic secrets.
/// O(1).
pub fn rotation_key(c2s_secret: &[u8; 32], s2c_secret: &[u8; 32]) -> [u8; 32] {
    let mut ikm = [0u8; 64];
    ikm[..32].copy_from_slice(c2s_secret);
    ikm[32..].copy_from_slice(s2c_secret);
    let (prk, _) = hkdf::Hkdf::<sha2::Sha256>::extract(Some(ROTATION_SALT), &ikm);
    prk.into()
}

/// The values of sequence `k` (≥ 0), given the handshake's SYNC_NOs.
/// O(k): each sequence's offsets are relative to the previous one's.
pub fn sequence_masks(prk: &[u8; 32], k: u32, c2s_sync0: u16, s2c_sync0: u16) -> SequenceMasks {
    let mut m = SequenceMasks {
        c2s_pn_offset: 0,
        s2c_pn_offset: 0,
        c2s_sync: c2s_sync0 & 0x0fff,
        s2c_sync: s2c_sync0 & 0x0fff,
    };
    let Ok(hk) = hkdf::Hkdf::<sha2::Sha256>::from_prk(prk) else {
        return m;
    };
    let step = |prev: u32, raw: u32| {
        prev.wrapping_add(PN_OFFSET_GAP)
            .wrapping_add(raw % (u32::MAX - 2 * PN_OFFSET_GAP + 1))
    };
    let sync = |raw: u16, prev: u16, first: u16| {
        let mut s = raw & 0x0fff;
        while s == prev || s == first {
            s = (s + 1) & 0x0fff;
        }
        s
    };
    for seq in 1..=k {
        let mut info = [0u8; 20];
        info[..16].copy_from_slice(ROTATION_LABEL);
        info[16..].copy_from_slice(&seq.to_be_bytes());
        let mut r = [0u8; 12];
        let _ = hk.expand(&info, &mut r);
        let u32_at = |i: usize| u32::from_be_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]);
        let u16_at = |i: usize| u16::from_be_bytes([r[i], r[i + 1]]);
        m = SequenceMasks {
            c2s_pn_offset: step(m.c2s_pn_offset, u32_at(0)),
            s2c_pn_offset: step(m.s2c_pn_offset, u32_at(4)),
            c2s_sync: sync(u16_at(8), m.c2s_sync, c2s_sync0 & 0x0fff),
            s2c_sync: sync(u16_at(10), m.s2c_sync, s2c_sync0 & 0x0fff),
        };
    }
    m
}

/// The handshake's IDs and SYNC_NOs of a connection (sequence 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BaseIds {
    pub local_id: u16,
    pub peer_id: u16,
    pub local_sync: u16,
    pub peer_sync: u16,
}

/// One sequence ≥ 1.
#[derive(Clone, Debug)]
struct Sequence {
    seq: u32,
    /// Our ID in it (server: the spare it issued; client: the fresh ID it
    /// took when switching).
    local_id: Option<u16>,
    /// The peer's ID in it (client: the server's spare; server: the
    /// client's fresh ID, from its first packet).
    peer_id: Option<u16>,
    masks: SequenceMasks,
    /// Server: the NEW_CONNECTION_ID was acknowledged.
    acked: bool,
    /// Server: when the NEW_CONNECTION_ID is (re)sent next.
    due_at: Time,
}

/// A wire header read back: the sequence and the packet-number offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Incoming {
    pub seq: u32,
    pub pn_offset: u32,
}

/// One protected connection's rotation state.
#[derive(Clone, Debug)]
pub(crate) struct Rotation {
    prk: [u8; 32],
    is_client: bool,
    base: Option<BaseIds>,
    seqs: Vec<Sequence>,
    /// Client: the sequence it sends with.
    current: u32,
    /// The newest sequence a packet arrived in.
    newest_received: u32,
    /// Server: per client address, the newest sequence received from it.
    by_addr: Vec<(SocketAddr, u32)>,
    /// Sequences below this are retired.
    retired_below: u32,
    /// Retire the sequences below `.1` at `.0`.
    retire_at: Option<(Time, u32)>,
    /// Local IDs the endpoint must forget (retired spares).
    released: Vec<u16>,
    /// Sequences changed: a client's switches, a server's new sequences
    /// seen from its client.
    pub(crate) changes: u64,
}

impl Rotation {
    /// Rotation for a connection whose generation-0 secrets gave `prk`.
    pub(crate) fn new(prk: [u8; 32], is_client: bool) -> Rotation {
        Rotation {
            prk,
            is_client,
            base: None,
            seqs: Vec::new(),
            current: 0,
            newest_received: 0,
            by_addr: Vec::new(),
            retired_below: 0,
            retire_at: None,
            released: Vec::new(),
            changes: 0,
        }
    }

    /// Learn the handshake's IDs (once; the connection's never change).
    pub(crate) fn set_base(&mut self, base: BaseIds) {
        self.base.get_or_insert(base);
    }

    fn masks(&self, seq: u32) -> SequenceMasks {
        let b = self.base.unwrap_or(BaseIds {
            local_id: 0,
            peer_id: 0,
            local_sync: 0,
            peer_sync: 0,
        });
        let (c2s, s2c) = if self.is_client {
            (b.local_sync, b.peer_sync)
        } else {
            (b.peer_sync, b.local_sync)
        };
        sequence_masks(&self.prk, seq, c2s, s2c)
    }

    fn get(&self, seq: u32) -> Option<&Sequence> {
        self.seqs.iter().find(|s| s.seq == seq)
    }

    /// Server: spare IDs issued and not yet used by the client.
    pub(crate) fn unused_spares(&self) -> usize {
        self.seqs
            .iter()
            .filter(|s| s.seq > self.newest_received && s.local_id.is_some())
            .count()
    }

    /// Server: issue `id` as the next sequence (sent at `now`). O(seqs).
    pub(crate) fn issue(&mut self, id: u16, now: Time) -> u32 {
        let seq = self.seqs.iter().map(|s| s.seq).max().unwrap_or(0) + 1;
        let masks = self.masks(seq);
        self.seqs.push(Sequence {
            seq,
            local_id: Some(id),
            peer_id: None,
            masks,
            acked: false,
            due_at: now,
        });
        seq
    }

    /// Server: a NEW_CONNECTION_ID due at `now` (then due again `retry`
    /// later until acknowledged): (sequence, id).
    pub(crate) fn poll_issue(
        &mut self,
        now: Time,
        retry: std::time::Duration,
    ) -> Option<(u32, u16)> {
        let s = self
            .seqs
            .iter_mut()
            .find(|s| !s.acked && s.due_at <= now && s.seq > self.retired_below)?;
        s.due_at = now + retry;
        Some((s.seq, s.local_id?))
    }

    /// Server: whether [`poll_issue`](Self::poll_issue) would find a
    /// NEW_CONNECTION_ID due at `now`, or the handshake's IDs are still to
    /// be learnt ([`set_base`](Self::set_base)). The sender asks on every
    /// datagram it builds; this lets it skip the retry interval and the
    /// IDs it would compute for a call that, almost always, finds nothing.
    /// O(seqs).
    pub(crate) fn issue_pending(&self, now: Time) -> bool {
        self.base.is_none()
            || self
                .seqs
                .iter()
                .any(|s| !s.acked && s.due_at <= now && s.seq > self.retired_below)
    }

    /// Whether an ID released by a retirement waits for
    /// [`take_released`](Self::take_released), or the handshake's IDs are
    /// still to be learnt. O(1).
    pub(crate) fn release_pending(&self) -> bool {
        self.base.is_none() || !self.released.is_empty()
    }

    /// Server: when a NEW_CONNECTION_ID is due next.
    pub(crate) fn issue_timeout(&self) -> Option<Time> {
        self.seqs
            .iter()
            .filter(|s| !s.acked && s.local_id.is_some())
            .map(|s| s.due_at)
            .min()
    }

    /// Server: the client echoed NEW_CONNECTION_ID (`seq`, `id`).
    pub(crate) fn on_issue_ack(&mut self, seq: u32, id: u16) {
        if let Some(s) = self
            .seqs
            .iter_mut()
            .find(|s| s.seq == seq && s.local_id == Some(id))
        {
            s.acked = true;
        }
    }

    /// Client: the server offers `id` for sequence `seq`. Repeats and
    /// sequences already passed change nothing; at most 16 kept.
    pub(crate) fn on_new_id(&mut self, seq: u32, id: u16) {
        if seq <= self.current || self.get(seq).is_some() || self.seqs.len() >= 16 {
            return;
        }
        let masks = self.masks(seq);
        self.seqs.push(Sequence {
            seq,
            local_id: None,
            peer_id: Some(id),
            masks,
            acked: true,
            due_at: Time::ZERO,
        });
    }

    /// Client: whether an unused spare waits.
    pub(crate) fn has_spare(&self) -> bool {
        self.seqs
            .iter()
            .any(|s| s.seq > self.current && s.local_id.is_none() && s.peer_id.is_some())
    }

    /// Client: switch to the lowest unused spare, with `local_id` as our
    /// new ID. Whether there was one. O(seqs).
    pub(crate) fn rotate(&mut self, local_id: u16) -> bool {
        let current = self.current;
        let Some(s) = self
            .seqs
            .iter_mut()
            .filter(|s| s.seq > current && s.local_id.is_none() && s.peer_id.is_some())
            .min_by_key(|s| s.seq)
        else {
            return false;
        };
        s.local_id = Some(local_id);
        self.current = s.seq;
        self.changes += 1;
        // Spares below the one taken will never be used.
        self.seqs.retain(|s| s.seq >= current);
        true
    }

    /// How a datagram to `dest` is rewritten: `None` in sequence 0.
    pub(crate) fn send_rewrite(&self, dest: SocketAddr) -> Option<Rewrite> {
        let seq = if self.is_client {
            self.current
        } else {
            self.by_addr
                .iter()
                .find(|(a, _)| *a == dest)
                .map_or(0, |(_, s)| *s)
        };
        if seq == 0 {
            return None;
        }
        let s = self.get(seq)?;
        Some(Rewrite {
            dest_id: s.peer_id?,
            src_id: s.local_id?,
            sync_no: if self.is_client {
                s.masks.c2s_sync
            } else {
                s.masks.s2c_sync
            },
            pn_offset: if self.is_client {
                s.masks.c2s_pn_offset
            } else {
                s.masks.s2c_pn_offset
            },
        })
    }

    /// The sequence a datagram addressed to our `dest_id` belongs to:
    /// `None` if that ID is retired (or not ours).
    pub(crate) fn incoming(&self, dest_id: u16) -> Option<Incoming> {
        let Some(base) = self.base else {
            // Never rotated (the IDs are learnt before the first spare).
            return Some(Incoming {
                seq: 0,
                pn_offset: 0,
            });
        };
        if dest_id == base.local_id {
            return (self.retired_below == 0).then_some(Incoming {
                seq: 0,
                pn_offset: 0,
            });
        }
        let s = self
            .seqs
            .iter()
            .find(|s| s.local_id == Some(dest_id) && s.seq >= self.retired_below)?;
        Some(Incoming {
            seq: s.seq,
            pn_offset: if self.is_client {
                s.masks.s2c_pn_offset
            } else {
                s.masks.c2s_pn_offset
            },
        })
    }

    /// After a datagram of `seq` from `remote` authenticated: learn the
    /// client's ID of a new sequence and where it is used, schedule the
    /// retirement of older sequences (`hold` from now), and rewrite the
    /// header `h` back to sequence 0's IDs and SYNC_NO. O(seqs).
    pub(crate) fn on_received(
        &mut self,
        seq: u32,
        remote: SocketAddr,
        h: &mut [u8],
        now: Time,
        hold: std::time::Duration,
    ) {
        if seq == 0 {
            return;
        }
        let Some(base) = self.base else {
            return;
        };
        if !self.is_client {
            let src = h.get(2..4).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
            if let Some(s) = self.seqs.iter_mut().find(|s| s.seq == seq) {
                if s.peer_id.is_none() && src != 0 {
                    s.peer_id = Some(src);
                }
            }
            match self.by_addr.iter_mut().find(|(a, _)| *a == remote) {
                Some((_, s)) => *s = (*s).max(seq),
                None => {
                    if self.by_addr.len() >= MAX_ADDRS {
                        self.by_addr.remove(0);
                    }
                    self.by_addr.push((remote, seq));
                }
            }
        }
        if seq > self.newest_received {
            if !self.is_client {
                self.changes += 1;
            }
            self.newest_received = seq;
            self.retire_at = Some((now + hold, seq));
        }
        Rewrite {
            dest_id: base.local_id,
            src_id: base.peer_id,
            sync_no: base.peer_sync,
            pn_offset: 0,
        }
        .apply_ids(h);
    }

    /// Retire what is due at `now`: the spare IDs of the sequences below
    /// the newest one used go to [`take_released`](Self::take_released).
    pub(crate) fn expire(&mut self, now: Time) {
        let Some((at, below)) = self.retire_at else {
            return;
        };
        if now < at {
            return;
        }
        self.retire_at = None;
        let (old, keep): (Vec<Sequence>, Vec<Sequence>) = std::mem::take(&mut self.seqs)
            .into_iter()
            .partition(|s| s.seq < below);
        self.seqs = keep;
        self.released
            .extend(old.into_iter().filter_map(|s| s.local_id));
        self.retired_below = self.retired_below.max(below);
        self.by_addr.retain(|(_, s)| *s >= below);
    }

    /// A local ID the endpoint must forget, if any.
    pub(crate) fn take_released(&mut self) -> Option<u16> {
        self.released.pop()
    }

    /// Our IDs of every sequence still held (for the endpoint to forget
    /// when the connection goes).
    pub(crate) fn local_ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.seqs
            .iter()
            .filter_map(|s| s.local_id)
            .chain(self.released.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_sequences_share_nothing_an_observer_sees() {
        let prk = rotation_key(&[1; 32], &[2; 32]);
        let mut prev = sequence_masks(&prk, 0, 0x123, 0x456);
        assert_eq!(prev.c2s_pn_offset, 0);
        assert_eq!((prev.c2s_sync, prev.s2c_sync), (0x123, 0x456));
        for k in 1..200 {
            let m = sequence_masks(&prk, k, 0x123, 0x456);
            for (a, b) in [
                (m.c2s_pn_offset, prev.c2s_pn_offset),
                (m.s2c_pn_offset, prev.s2c_pn_offset),
            ] {
                let d = a.wrapping_sub(b);
                assert!(
                    (PN_OFFSET_GAP..=u32::MAX - PN_OFFSET_GAP + 1).contains(&d),
                    "{k}: {d}"
                );
            }
            assert_ne!(m.c2s_sync, prev.c2s_sync);
            assert_ne!(m.s2c_sync, prev.s2c_sync);
            assert_ne!(m.c2s_sync, 0x123);
            assert!(m.c2s_sync <= 0xfff && m.s2c_sync <= 0xfff);
            prev = m;
        }
    }

    #[test]
    fn a_client_switches_and_a_server_follows_per_address() {
        let prk = rotation_key(&[1; 32], &[2; 32]);
        let (a, b): (SocketAddr, SocketAddr) =
            ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
        let mut srv = Rotation::new(prk, false);
        srv.set_base(BaseIds {
            local_id: 100,
            peer_id: 200,
            local_sync: 5,
            peer_sync: 6,
        });
        let mut cli = Rotation::new(prk, true);
        cli.set_base(BaseIds {
            local_id: 200,
            peer_id: 100,
            local_sync: 6,
            peer_sync: 5,
        });
        let seq = srv.issue(101, Time::ZERO);
        assert_eq!(
            srv.poll_issue(Time::ZERO, std::time::Duration::from_secs(1)),
            Some((1, 101))
        );
        cli.on_new_id(seq, 101);
        assert!(cli.has_spare());
        assert_eq!(cli.send_rewrite(b), None);
        assert!(cli.rotate(201));
        let rw = cli.send_rewrite(b).expect("rotated");
        assert_eq!((rw.dest_id, rw.src_id), (101, 201));
        // The server reads it back, learns the client's ID for address b.
        let inc = srv.incoming(101).expect("a spare");
        assert_eq!(inc.pn_offset, rw.pn_offset);
        let mut h = [0u8; 20];
        rw.apply_ids(&mut h);
        srv.on_received(
            inc.seq,
            b,
            &mut h,
            Time::ZERO,
            std::time::Duration::from_secs(1),
        );
        assert_eq!(&h[0..4], &[0, 100, 0, 200], "back to the handshake's IDs");
        assert_eq!(srv.send_rewrite(a), None, "the old path keeps the old IDs");
        let back = srv.send_rewrite(b).expect("the new path");
        assert_eq!((back.dest_id, back.src_id), (201, 101));
        // Retirement after the hold.
        srv.expire(Time::from_nanos(2_000_000_000));
        assert!(srv.incoming(100).is_none(), "the handshake's ID is retired");
        assert!(srv.incoming(101).is_some());
    }
}
