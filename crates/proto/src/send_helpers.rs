//! Writing one datagram into the caller's buffer: the packet builder.
//!
//! [`build`] encodes a connection's packet and reports what it wrote
//! ([`Written`]: the header as on the wire, the full packet number, the
//! lengths), so the sealer and the tracer downstream use that report
//! instead of reading back the bytes it just encoded.

use crate::wire::{DatagramRepr, Flags, Header, HeaderRepr, PacketType, Payload, HEADER_LEN};

/// Where one outgoing datagram is built and sealed: the caller's vector
/// from `start` on. The bytes before `start` (datagrams the caller
/// already collected: a runtime's send batch) are never touched; the
/// bytes from `start` on are overwritten, and the vector grows (zeroing
/// only the growth) when the datagram reaches past its end. Bytes past
/// the datagram's end are left as they were: the builder and the sealer
/// report the datagram's length, nobody reads it from the vector's
/// (issue 36: the datagram is built where it leaves from, not copied
/// there, and a reused buffer is not zeroed first).
#[derive(Debug)]
pub(crate) struct TxBuf<'a> {
    vec: &'a mut Vec<u8>,
    start: usize,
}

impl<'a> TxBuf<'a> {
    /// The datagram begins at `vec[start]` (the vector is zero-extended
    /// to `start` should it be shorter). O(1) unless it is.
    pub(crate) fn new(vec: &'a mut Vec<u8>, start: usize) -> TxBuf<'a> {
        if vec.len() < start {
            vec.resize(start, 0);
        }
        TxBuf { vec, start }
    }

    /// The datagram's first `len` bytes, writable; the vector grows if it
    /// is shorter (only the growth is zeroed). O(growth).
    pub(crate) fn window(&mut self, len: usize) -> &mut [u8] {
        let end = self.start + len;
        if self.vec.len() < end {
            self.vec.resize(end, 0);
        }
        &mut self.vec[self.start..end]
    }

    /// Bytes `range` of the datagram (relative to its start), if the
    /// vector holds them. O(1).
    pub(crate) fn get(&self, range: std::ops::Range<usize>) -> Option<&[u8]> {
        self.vec
            .get(self.start + range.start..self.start.checked_add(range.end)?)
    }

    /// Writes `bytes` at offset `at` of the datagram, growing the vector
    /// as needed. O(len).
    pub(crate) fn put(&mut self, at: usize, bytes: &[u8]) {
        if let Some(w) = self.window(at + bytes.len()).get_mut(at..) {
            w.copy_from_slice(bytes);
        }
    }

    /// Ends the vector right after the datagram's first `len` bytes (for
    /// callers that want the vector to hold exactly the datagram). O(1).
    #[cfg(test)]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.vec.truncate(self.start + len);
    }
}

/// What [`build`] wrote into the buffer. `Copy`, a few dozen bytes: it
/// travels from the connection's `poll_transmit` to the endpoint, which
/// seals and traces with it (`Connection::seal_outgoing`,
/// `Connection::trace_sent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    /// The base header exactly as written: TOTAL_LEN and CHKSUM as on the
    /// wire (plaintext, before sealing).
    pub header: HeaderRepr,
    /// The full packet number; `None` for the types without one (START,
    /// REJECT).
    pub packet_number: Option<u64>,
    /// Bytes after the header (no tag yet).
    pub payload_len: usize,
}

impl Written {
    /// The datagram's length before sealing: header and payload.
    pub(crate) fn len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Its packet type.
    pub(crate) fn pk_type(&self) -> PacketType {
        self.header.pk_type
    }

    /// The report for a datagram copied in whole rather than built (a
    /// server's repeated START-REPLY): its header is read once here.
    /// `None` if `bytes` is not a datagram.
    pub(crate) fn of_copy(bytes: &[u8]) -> Option<Written> {
        let header = HeaderRepr::decode(bytes).ok()?;
        Some(Written {
            header,
            packet_number: None,
            payload_len: bytes.len().checked_sub(HEADER_LEN)?,
        })
    }
}

/// Encodes `header` + `payload` (no tag) into `buf` (at its start, see
/// [`TxBuf`]) and reports what it wrote. `packet_number` is the full
/// number the connection took for it (its low 32 bits are the payload's),
/// `None` for START. `None` only if the wire encoder refuses the values,
/// which the connection never builds. O(datagram); allocates only if the
/// vector must grow.
pub(crate) fn build(
    buf: &mut TxBuf<'_>,
    header: HeaderRepr,
    payload: Payload<'_>,
    packet_number: Option<u64>,
) -> Option<Written> {
    debug_assert_eq!(
        payload.packet_number(),
        packet_number.map(|pn| pn as u32),
        "the packet number the builder is told is the payload's"
    );
    let mut header = header;
    let n = encode_at(buf, header, payload)?;
    // The encoder computed TOTAL_LEN (`n`, which it checked fits) and,
    // under ST_CKS, CHKSUM: the one field is read from where it was just
    // written, nothing is re-parsed.
    header.total_len = u16::try_from(n).ok()?;
    if header.flags.contains(Flags::ST_CKS) {
        header.chksum = Header::new_checked(buf.get(0..n)?).ok()?.chksum();
    }
    Some(Written {
        header,
        packet_number,
        payload_len: n.checked_sub(HEADER_LEN)?,
    })
}

/// Encodes `header` + `payload` (no tag) into `buf`, replacing its
/// contents; its length. For packets that are not a connection's (the
/// endpoint's stateless answers). `None` as for [`build`]; the buffer is
/// then left empty.
pub(crate) fn write(buf: &mut Vec<u8>, header: HeaderRepr, payload: Payload<'_>) -> Option<usize> {
    let n = encode_at(&mut TxBuf::new(buf, 0), header, payload);
    buf.truncate(n.unwrap_or(0));
    n
}

fn encode_at(buf: &mut TxBuf<'_>, header: HeaderRepr, payload: Payload<'_>) -> Option<usize> {
    let dg = DatagramRepr {
        header,
        payload,
        auth_tag: &[],
    };
    let len = dg.buffer_len();
    // The encoder writes every byte of the datagram (each field, padding
    // as zeros), so the bytes the buffer already holds there — the last
    // datagram's — are overwritten, not zeroed first: only growth past
    // them is initialised (issue 36: a memset of every datagram). The
    // test `stale_bytes_never_reach_the_wire` holds the encoders to it.
    dg.emit(buf.window(len)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{
        BarePayload, CwinPayload, CwinReason, DataPayload, EchoPayload, GroupPayload, Reliability,
        StreamFrame,
    };
    use proptest::prelude::*;

    /// [`build`] at the start of `buf`, which then holds exactly the
    /// datagram.
    fn build_vec(
        buf: &mut Vec<u8>,
        header: HeaderRepr,
        payload: Payload<'_>,
        packet_number: Option<u64>,
    ) -> Option<Written> {
        let mut tx = TxBuf::new(buf, 0);
        let w = build(&mut tx, header, payload, packet_number);
        tx.truncate(w.map_or(0, |w| w.len()));
        w
    }

    /// A payload of `t`'s family carrying `pn`'s low bits (`None` for
    /// START/REJECT, which the connection builds through other tests).
    fn payload(t: PacketType, pn: u64, data: &[u8]) -> Option<Payload<'_>> {
        use PacketType as T;
        let packet_number = pn as u32;
        Some(match t {
            T::Data => Payload::Data(DataPayload {
                packet_number,
                frames: vec![StreamFrame {
                    stream_id: 3,
                    message_number: 9,
                    block_index: 0,
                    block_count: 1,
                    reliability: Reliability::Reliable,
                    data,
                }]
                .into(),
            }),
            T::Echo | T::Echo1 | T::Echo2 => Payload::Echo(EchoPayload {
                packet_number,
                probe_id: 1,
                timestamp_ns: 2,
                arrival_ns: None,
                padding_len: data.len() as u16,
            }),
            T::Cwin => Payload::Cwin(CwinPayload {
                packet_number,
                window_bytes: 4096,
                reason: CwinReason::UNSPECIFIED,
            }),
            T::Join | T::Leave => Payload::Group(GroupPayload {
                packet_number,
                group_id: 5,
            }),
            T::End | T::Fin | T::Idle | T::Status => Payload::Bare(BarePayload { packet_number }),
            _ => return None,
        })
    }

    /// Every type `payload` builds, plus START and REJECT.
    fn any_payload<'a>(t: PacketType, pn: u64, data: &'a [u8], tlv: &'a [u8]) -> Payload<'a> {
        use crate::wire::tlv::Tlv;
        use crate::wire::{
            AckPayload, AckRange, MissingPackets, NackPayload, RejectPayload, RejectReason,
            StartPayload, StreamCredit,
        };
        let packet_number = pn as u32;
        match t {
            PacketType::Start => Payload::Start(StartPayload {
                tlvs: vec![
                    Tlv::Version(1),
                    Tlv::Padding(data.len() as u16),
                    Tlv::RetryToken(tlv),
                ],
            }),
            PacketType::Reject => Payload::Reject(RejectPayload {
                reason: RejectReason::BUSY,
                tlvs: vec![Tlv::Padding(data.len() as u16), Tlv::RetryToken(tlv)],
            }),
            PacketType::Ack => Payload::Ack(AckPayload {
                packet_number,
                largest_acked: 1_000,
                ack_delay_us: 7,
                first_range: 3,
                ranges: vec![AckRange { gap: 2, length: 4 }],
                credits: vec![StreamCredit {
                    stream: 1,
                    max_message: 9,
                }],
                ..AckPayload::default()
            }),
            PacketType::Nack => Payload::Nack(NackPayload {
                packet_number,
                missing_packets: vec![MissingPackets { first: 5, count: 2 }],
                missing_blocks: Vec::new(),
            }),
            _ => payload(t, pn, data).expect("the other types"),
        }
    }

    proptest! {
        /// The builder reuses the buffer's bytes without zeroing them:
        /// a datagram built over the stale bytes of any other one is
        /// byte for byte the datagram built into an empty buffer.
        #[test]
        fn stale_bytes_never_reach_the_wire(
            t in proptest::sample::select(PacketType::ALL.to_vec()),
            pn in any::<u64>(),
            checksum in any::<bool>(),
            data in proptest::collection::vec(any::<u8>(), 0..1400),
            stale_len in 0usize..2000,
            stale_byte in 1u8..=255,
        ) {
            let tlv = [0x11u8; 6];
            let mut h = HeaderRepr::new(t);
            (h.dest_id, h.src_id) = (3, 4);
            if checksum {
                h.flags = Flags::ST_CKS | Flags::W_VAL;
            }
            let pn_of = |t: PacketType| (!t.is_handshake()).then_some(pn);
            let mut fresh = Vec::new();
            let wf = build_vec(&mut fresh, h, any_payload(t, pn, &data, &tlv), pn_of(t));
            let mut stale = vec![stale_byte; stale_len];
            let ws = build_vec(&mut stale, h, any_payload(t, pn, &data, &tlv), pn_of(t));
            prop_assert!(wf.is_some());
            prop_assert_eq!(wf, ws);
            prop_assert_eq!(&fresh, &stale);
        }

        /// Whatever the header's fields and the packet number, the report
        /// is what a decoder reads from the bytes: the header with
        /// TOTAL_LEN and CHKSUM, the number's low bits, the lengths.
        #[test]
        fn the_report_matches_a_decode_of_the_bytes(
            t in proptest::sample::select(PacketType::ALL.to_vec()),
            pn in any::<u64>(),
            ids in (any::<u16>(), any::<u16>()),
            checksum in any::<bool>(),
            window_size in 0u32..=0x000f_ffff,
            data in proptest::collection::vec(any::<u8>(), 0..1400),
        ) {
            let Some(p) = payload(t, pn, &data) else {
                return Ok(());
            };
            let mut h = HeaderRepr::new(t);
            (h.dest_id, h.src_id) = ids;
            h.window_size = window_size;
            if checksum {
                h.flags = Flags::ST_CKS | Flags::W_VAL;
            }
            // A buffer holding stale bytes of a longer datagram.
            let mut buf = vec![0xa5; 2000];
            let w = build_vec(&mut buf, h, p, Some(pn)).expect("valid");
            prop_assert_eq!(w.len(), buf.len());
            let dg = DatagramRepr::decode(&buf).expect("decodes");
            prop_assert_eq!(w.header, dg.header);
            prop_assert_eq!(w.pk_type(), t);
            prop_assert_eq!(dg.payload.packet_number(), Some(pn as u32));
            prop_assert_eq!(w.packet_number, Some(pn));
            prop_assert_eq!(w.payload_len, buf.len() - HEADER_LEN);
        }

        /// Built at an offset, over a vector holding earlier datagrams
        /// and stale bytes past them: the same bytes and report as built
        /// alone, and not one byte before the offset changes.
        #[test]
        fn a_datagram_built_at_an_offset_is_the_same_and_leaves_the_prefix(
            t in proptest::sample::select(PacketType::ALL.to_vec()),
            pn in any::<u64>(),
            data in proptest::collection::vec(any::<u8>(), 0..1400),
            prefix in proptest::collection::vec(any::<u8>(), 0..3000),
            stale_len in 0usize..2000,
        ) {
            let tlv = [0x22u8; 6];
            let mut h = HeaderRepr::new(t);
            (h.dest_id, h.src_id) = (7, 8);
            let pn_of = |t: PacketType| (!t.is_handshake()).then_some(pn);
            let mut alone = Vec::new();
            let wa = build_vec(&mut alone, h, any_payload(t, pn, &data, &tlv), pn_of(t));
            let mut batch = prefix.clone();
            batch.resize(prefix.len() + stale_len, 0x5a);
            let mut tx = TxBuf::new(&mut batch, prefix.len());
            let wb = build(&mut tx, h, any_payload(t, pn, &data, &tlv), pn_of(t));
            prop_assert_eq!(wa, wb);
            let n = wb.map_or(0, |w| w.len());
            prop_assert_eq!(&batch[..prefix.len()], &prefix[..]);
            prop_assert_eq!(&batch[prefix.len()..prefix.len() + n], &alone[..]);
        }
    }
}
