//! The test vectors of `docs/protocol.md`, checked both ways: each hex
//! string decodes to its datagram and the datagram encodes to the hex.
//! A last test reads the document and checks that its hex blocks are
//! exactly these, so the two cannot drift apart.

use peregrine_proto::wire::*;

/// One vector: its name in the document, its bytes, and the datagram.
struct Vector {
    name: &'static str,
    hex: &'static str,
    datagram: DatagramRepr<'static>,
}

fn header(pk_type: PacketType, flags: Flags, total_len: u16, chksum: u16) -> HeaderRepr {
    HeaderRepr {
        dest_id: 0x0b02,
        src_id: 0x0a01,
        flags,
        total_len,
        chksum,
        sync_no: 0x5a3,
        ..HeaderRepr::new(pk_type)
    }
}

fn dg(header: HeaderRepr, payload: Payload<'static>) -> DatagramRepr<'static> {
    DatagramRepr {
        header,
        payload,
        auth_tag: &[],
    }
}

fn bare(pn: u32) -> Payload<'static> {
    Payload::Bare(BarePayload { packet_number: pn })
}

/// The ACK of the `ack*` vectors (packet 0x20 acknowledging 995..=1000
/// and 982..=992, 250 µs late) with the given optional sections.
fn ack_1000(
    credits: Vec<StreamCredit>,
    frequency: Option<AckFrequency>,
    ecn: Option<AckEcnCounts>,
) -> AckPayload {
    AckPayload {
        packet_number: 0x20,
        largest_acked: 1000,
        ack_delay_us: 250,
        first_range: 5,
        ranges: vec![AckRange { gap: 1, length: 10 }],
        credits,
        frequency,
        ecn,
    }
}

fn frame(
    stream_id: u16,
    message_number: u32,
    block_index: u16,
    block_count: u16,
    reliability: Reliability,
    data: &'static [u8],
) -> StreamFrame<'static> {
    StreamFrame {
        stream_id,
        message_number,
        block_index,
        block_count,
        reliability,
        data,
    }
}

#[allow(clippy::too_many_lines)]
fn vectors() -> Vec<Vector> {
    use PacketType as T;
    let mut v = Vec::new();
    let mut push = |name, hex, datagram| {
        v.push(Vector {
            name,
            hex,
            datagram,
        })
    };

    // START: the opening request. Checksummed, window valid (scale 4).
    let mut h = header(
        T::Start,
        Flags::W_VAL | Flags::ST_CKS | Flags::REPLY_REQ,
        46,
        0x6afe,
    );
    h.dest_id = 0;
    h.window_size = 0x02400;
    push(
        "start",
        "00000a0110c46afe002e0000000000005a30240001000200010200010403000205ac040005637562696305000101", dg(h, Payload::Start(StartPayload {
        tlvs: vec![
            Tlv::Version(1),
            Tlv::WindowScale(4),
            Tlv::MaxPacketSize(1452),
            Tlv::Controller("cubic"),
            Tlv::StartupMode(StartupMode::PacketPair),
        ],
    })));

    // START with REPLY: accepts, and carries a TLV the requester may not know.
    let mut h = header(T::Start, Flags::W_VAL | Flags::REPLY, 42, 0x0000);
    h.dest_id = 0x0a01;
    h.src_id = 0x0b02;
    h.window_size = 0x01000;
    push(
        "start_reply",
        "0a010b0210820000002a0000000000005a3010000100020001020001040400056375626963800002cafe",
        dg(
            h,
            Payload::Start(StartPayload {
                tlvs: vec![
                    Tlv::Version(1),
                    Tlv::WindowScale(4),
                    Tlv::Controller("cubic"),
                    Tlv::Unknown {
                        tlv_type: 0x80,
                        value: &[0xca, 0xfe],
                    },
                ],
            }),
        ),
    );

    // START offering the packet AEADs (TLV 10, docs/protocol.md §6.1):
    // AES-128-GCM (1) first, then ChaCha20-Poly1305 (2). A protected
    // client sends it beside its SECURITY TLV; the binding covers it.
    let mut h = header(
        T::Start,
        Flags::W_VAL | Flags::ST_CKS | Flags::REPLY_REQ,
        30,
        0x61de,
    );
    h.dest_id = 0;
    h.window_size = 0x02400;
    push(
        "start_aead",
        "00000a0110c461de001e0000000000005a30240001000200010a00020102",
        dg(
            h,
            Payload::Start(StartPayload {
                tlvs: vec![Tlv::Version(1), Tlv::Aead(&[1, 2])],
            }),
        ),
    );

    // Its answer: the server chose AES-128-GCM (exactly one code).
    let mut h = header(
        T::Start,
        Flags::W_VAL | Flags::ST_CKS | Flags::REPLY,
        29,
        0x6ae2,
    );
    h.dest_id = 0x0a01;
    h.src_id = 0x0b02;
    h.window_size = 0x01000;
    push(
        "start_reply_aead",
        "0a010b0210c26ae2001d0000000000005a30100001000200010a000101",
        dg(
            h,
            Payload::Start(StartPayload {
                tlvs: vec![Tlv::Version(1), Tlv::Aead(&[1])],
            }),
        ),
    );

    let mut h = header(T::Reject, Flags::REPLY, 26, 0x0000);
    h.dest_id = 0x0a01;
    h.src_id = 0;
    push(
        "reject",
        "0a01000020020000001a0000000000005a300000010100020001",
        dg(
            h,
            Payload::Reject(RejectPayload {
                reason: RejectReason::VERSION_UNSUPPORTED,
                tlvs: vec![Tlv::Version(1)],
            }),
        ),
    );

    // REJECT retry: a stateless retry token (4-byte issued_at_ms, then 16
    // bytes of HMAC; here illustrative bytes).
    let mut h = header(T::Reject, Flags::REPLY, 49, 0x0000);
    h.dest_id = 0x0a01;
    h.src_id = 0;
    push(
        "reject_retry",
        "0a0100002002000000310000000000005a300000070100020001080014000003e8112233445566778899aabbccddeeff00",
        dg(
            h,
            Payload::Reject(RejectPayload {
                reason: RejectReason::RETRY,
                tlvs: vec![
                    Tlv::Version(1),
                    Tlv::RetryToken(&[
                        0, 0, 0x03, 0xe8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99,
                        0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,
                    ]),
                ],
            }),
        ),
    );

    // DATA, one frame: the header mirrors the frame as plain SLTP would.
    let mut h = header(T::Data, Flags::ST_CKS | Flags::ST_RTR, 42, 0xfce5);
    h.pri = 1;
    h.mess_seq_no = 7;
    h.pblock = 0;
    h.tblock = 1;
    push(
        "data",
        "0b020a013460fce5002a0001000700005a300000000000100000800000000700000001000568656c6c6f",
        dg(
            h,
            Payload::Data(DataPayload {
                packet_number: 0x10,
                frames: vec![frame(0, 7, 0, 1, Reliability::Reliable, b"hello")].into(),
            }),
        ),
    );

    // DATA coalescing three frames of two streams: a whole 6-byte command
    // of stream 1, the middle block of a 3-block message of stream 2, and
    // the next unreliable message of stream 1. The header describes the
    // first frame; PRI is the most urgent frame's class.
    let mut h = header(T::Data, Flags::ST_RTR, 82, 0x0000);
    h.pri = 0;
    h.mess_seq_no = 41;
    h.pblock = 0;
    h.tblock = 1;
    h.mess_acc_no = 3;
    push(
        "data_coalesced",
        "0b020a013020000000520001002900035a3000000000001100018000000029000000010006636d643a757000022000000004000100030004deadbeef0001c00000002a00000001000974656c656d65747279", dg(h, Payload::Data(DataPayload {
        packet_number: 0x11,
        frames: vec![
            frame(1, 41, 0, 1, Reliability::Reliable, b"cmd:up"),
            frame(2, 4, 1, 3, Reliability::Partial, &[0xde, 0xad, 0xbe, 0xef]),
            frame(1, 42, 0, 1, Reliability::Unreliable, b"telemetry"),
        ].into(),
    })));

    // DATA with a skip frame (stream 2 abandoned message 5; an ordered
    // stream, so R = 1) and a retransmitted reliable-unordered message of
    // stream 3 (R = 3): skip frames travel as retransmissions (ST_RET).
    let mut h = header(T::Data, Flags::ST_RTR | Flags::ST_RET, 52, 0x0000);
    h.pri = 1;
    h.mess_seq_no = 5;
    push(
        "data_skip",
        "0b020a013430000000340000000500005a30000000000012000220000000050000000000000003e0000000090000000100026f6b",
        dg(
            h,
            Payload::Data(DataPayload {
                packet_number: 0x12,
                frames: vec![
                    StreamFrame::skip(2, 5, Reliability::Partial),
                    frame(3, 9, 0, 1, Reliability::ReliableUnordered, b"ok"),
                ].into(),
            }),
        ),
    );

    // ACK: 995..=1000 and 982..=992; MESS_ACC_NO and EOM report messages.
    let mut h = header(T::Ack, Flags::W_VAL | Flags::EOM, 49, 0x0000);
    h.mess_acc_no = 12;
    h.window_size = 0x02400;
    push(
        "ack",
        "0b020a0140810000003100000000000c5a3024000000002000000000000003e8000000fa0100000005000000010000000a", dg(h, Payload::Ack(ack_1000(Vec::new(), None, None))));

    // The same ACK with a credit section (§6.5.1): stream 1 may send new
    // data of messages below 4, stream 3 below 70,000.
    let mut h = header(T::Ack, Flags::W_VAL | Flags::EOM, 62, 0x0000);
    h.mess_acc_no = 12;
    h.window_size = 0x02400;
    push(
        "ack_credit",
        "0b020a0140810000003e00000000000c5a3024000000002000000000000003e8000000fa0100000005000000010000000a02000100000004000300011170", dg(h, Payload::Ack(ack_1000(
        vec![
            StreamCredit { stream: 1, max_message: 4 },
            StreamCredit { stream: 3, max_message: 70_000 },
        ],
        None,
        None,
    ))));

    // The ACK of `ack`, asking for an ACK-of-ACK (REPLY_REQ), with an
    // ACK-frequency section (§6.5.2) behind an empty credit section.
    let mut h = header(
        T::Ack,
        Flags::W_VAL | Flags::REPLY_REQ | Flags::EOM,
        60,
        0x0000,
    );
    h.mess_acc_no = 12;
    h.window_size = 0x02400;
    push(
        "ack_frequency",
        "0b020a0140850000003c00000000000c5a3024000000002000000000000003e8000000fa0100000005000000010000000a0000000003001000002710", dg(h, Payload::Ack(ack_1000(
        Vec::new(),
        Some(AckFrequency { sequence: 3, threshold: 16, max_ack_delay_us: 10_000 }),
        None,
    ))));

    // The ACK of `ack` with an ECN section (§6.5.3) behind an empty
    // credit section: 10 DATA packets arrived ECT(0), none ECT(1), 2 CE —
    // three one-byte varints.
    let mut h = header(T::Ack, Flags::W_VAL | Flags::EOM, 53, 0x0000);
    h.mess_acc_no = 12;
    h.window_size = 0x02400;
    push(
        "ack_ecn",
        "0b020a0140810000003500000000000c5a3024000000002000000000000003e8000000fa0100000005000000010000000a000a0002", dg(h, Payload::Ack(ack_1000(
        Vec::new(),
        None,
        Some(AckEcnCounts { ect0: 10, ect1: 0, ce: 2 }),
    ))));

    push(
        "nack",
        "0b020a0150000000002e0000000000005a30000000000021010100000000000003e1000000020002000000040000", dg(header(T::Nack, Flags::EMPTY, 46, 0x0000), Payload::Nack(NackPayload {
        packet_number: 0x21,
        missing_packets: vec![MissingPackets { first: 993, count: 2 }],
        missing_blocks: vec![MissingBlock { stream_id: 2, message_number: 4, block_index: 0 }],
    })));

    let mut h = header(T::End, Flags::REPLY_REQ, 24, 0x0000);
    h.mess_seq_no = 42;
    push(
        "end",
        "0b020a016004000000180000002a00005a30000000000030",
        dg(h, bare(0x30)),
    );

    push(
        "fin",
        "0b020a017000000000180000000000005a30000000000031",
        dg(header(T::Fin, Flags::EMPTY, 24, 0x0000), bare(0x31)),
    );

    let echo = |pn, probe_id, padding_len| {
        Payload::Echo(EchoPayload {
            packet_number: pn,
            probe_id,
            timestamp_ns: 1_500_000_000,
            arrival_ns: None,
            padding_len,
        })
    };
    push(
        "echo",
        "0b020a018004000000240000000000005a30000000000040000000010000000059682f00",
        dg(
            header(T::Echo, Flags::REPLY_REQ, 36, 0x0000),
            echo(0x40, 1, 0),
        ),
    );
    push(
        "echo_1",
        "0b020a0190040000002c0000000000005a30000000000041000000020000000059682f000000000000000000",
        dg(
            header(T::Echo1, Flags::REPLY_REQ, 44, 0x0000),
            echo(0x41, 2, 8),
        ),
    );
    push(
        "echo_2",
        "0b020a01a0040000002c0000000000005a30000000000042000000020000000059682f000000000000000000",
        dg(
            header(T::Echo2, Flags::REPLY_REQ, 44, 0x0000),
            echo(0x42, 2, 8),
        ),
    );

    // STATUS answering a poll: the window is in the header.
    let mut h = header(T::Status, Flags::W_VAL | Flags::REPLY, 24, 0x0000);
    h.window_size = 0x00800;
    push(
        "status",
        "0b020a01b082000000180000000000005a30080000000050",
        dg(h, bare(0x50)),
    );

    push(
        "idle",
        "0b020a01c000000000180000000000005a30000000000051",
        dg(header(T::Idle, Flags::EMPTY, 24, 0x0000), bare(0x51)),
    );

    // CWIN closing the window for a handover.
    let mut h = header(T::Cwin, Flags::W_VAL, 29, 0x0000);
    h.cn = 1;
    push(
        "cwin",
        "0b020a01d1800000001d0000000000005a300000000000600000000001",
        dg(
            h,
            Payload::Cwin(CwinPayload {
                packet_number: 0x60,
                window_bytes: 0,
                reason: CwinReason::HANDOVER_START,
            }),
        ),
    );

    let group = |pn| {
        Payload::Group(GroupPayload {
            packet_number: pn,
            group_id: 0xe000_0001,
        })
    };
    push(
        "join",
        "0b020a01e0040000001c0000000000005a30000000000070e0000001",
        dg(header(T::Join, Flags::REPLY_REQ, 28, 0x0000), group(0x70)),
    );
    push(
        "leave",
        "0b020a01f0000000001c0000000000005a30000000000071e0000001",
        dg(header(T::Leave, Flags::EMPTY, 28, 0x0000), group(0x71)),
    );

    // The source's answer to a JOIN (from 0x0a01's peer: ids swapped).
    let mut h = header(T::Join, Flags::REPLY, 28, 0x0000);
    (h.dest_id, h.src_id) = (0x0a01, 0x0b02);
    push(
        "join_reply",
        "0a010b02e0020000001c0000000000005a30000000000072e0000001",
        dg(h, group(0x72)),
    );

    // PATH_CHALLENGE (§6.7.1): ECHO, REPLY_REQ, PROBE_ID "PATH", 64
    // random bits where the timestamp goes; checksummed.
    let path = |pn| {
        Payload::Echo(EchoPayload {
            packet_number: pn,
            probe_id: 0x5041_5448,
            timestamp_ns: 0x0123_4567_89ab_cdef,
            arrival_ns: None,
            padding_len: 0,
        })
    };
    push(
        "path_challenge",
        "0b020a018044cd3400240000000000005a30000000000080504154480123456789abcdef",
        dg(
            header(T::Echo, Flags::ST_CKS | Flags::REPLY_REQ, 36, 0xcd34),
            path(0x80),
        ),
    );
    // PATH_RESPONSE: the peer's ECHO answer, same PROBE_ID and bits.
    let mut h = header(T::Echo, Flags::ST_CKS | Flags::REPLY, 36, 0xcd26);
    (h.dest_id, h.src_id) = (0x0a01, 0x0b02);
    push(
        "path_response",
        "0a010b028042cd2600240000000000005a30000000000090504154480123456789abcdef",
        dg(h, path(0x90)),
    );

    // A group message (§6.10.1) on a member's connection: DATA, stream 1,
    // message 0, whose bytes are GROUP_ID 0xe0000001, GROUP_SEQ 5, `hi`.
    let mut h = header(T::Data, Flags::ST_RTR, 51, 0x0000);
    h.tblock = 1;
    push(
        "data_group",
        "0b020a013020000000330001000000005a300000000000120001800000000000000001000ee000000100000000000000056869",
        dg(
            h,
            Payload::Data(DataPayload {
                packet_number: 0x12,
                frames: vec![frame(
                    1,
                    0,
                    0,
                    1,
                    Reliability::Reliable,
                    &[0xe0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, b'h', b'i'],
                )].into(),
            }),
        ),
    );
    v
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn every_packet_type_has_a_vector() {
    let vs = vectors();
    for t in PacketType::ALL {
        assert!(
            vs.iter().any(|v| v.datagram.header.pk_type == t),
            "no vector for {t}"
        );
    }
    let coalesced = vs.iter().find(|v| v.name == "data_coalesced").unwrap();
    let Payload::Data(d) = &coalesced.datagram.payload else {
        panic!("data_coalesced is not DATA");
    };
    let streams: std::collections::BTreeSet<u16> = d.frames.iter().map(|f| f.stream_id).collect();
    assert_eq!((d.frames.len(), streams.len()), (3, 2));
}

#[test]
fn vectors_decode_to_their_datagrams() {
    for v in vectors() {
        let bytes = from_hex(v.hex);
        let decoded = DatagramRepr::decode(&bytes)
            .unwrap_or_else(|e| panic!("vector {} does not decode: {e}", v.name));
        assert_eq!(decoded, v.datagram, "vector {}", v.name);
    }
}

#[test]
fn datagrams_encode_to_their_vectors() {
    for v in vectors() {
        let mut buf = [0u8; 512];
        let n = v.datagram.emit(&mut buf).unwrap();
        assert_eq!(n, v.datagram.buffer_len());
        assert_eq!(to_hex(&buf[..n]), v.hex, "vector {}", v.name);
    }
}

#[test]
fn data_vectors_follow_the_header_summary_rule() {
    for v in vectors() {
        if let Payload::Data(d) = &v.datagram.payload {
            let s = d.header_summary();
            let h = &v.datagram.header;
            assert_eq!(
                (h.mess_seq_no, h.pblock, h.tblock),
                (s.mess_seq_no, s.pblock, s.tblock),
                "vector {}",
                v.name
            );
        }
    }
}

/// The `<!-- vector: NAME -->` blocks of docs/protocol.md, in order.
fn doc_vectors() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/protocol.md");
    let doc = std::fs::read_to_string(path).expect("docs/protocol.md");
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- vector: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next().map(str::trim),
            Some("```text"),
            "vector {name}"
        );
        let mut hex = String::new();
        for l in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            hex.extend(l.chars().filter(|c| !c.is_whitespace()));
        }
        out.push((name.to_string(), hex));
    }
    out
}

#[test]
fn the_document_holds_exactly_these_vectors() {
    let doc = doc_vectors();
    let ours: Vec<(String, String)> = vectors()
        .into_iter()
        .map(|v| (v.name.to_string(), v.hex.to_string()))
        .collect();
    assert_eq!(doc, ours);
}

/// The vectors as hex blocks in the document's format (4 bytes a line).
#[test]
#[ignore = "prints the document's vector blocks"]
fn print_doc_blocks() {
    for v in vectors() {
        println!("<!-- vector: {} -->\n```text", v.name);
        let bytes = from_hex(v.hex);
        for row in bytes.chunks(4) {
            let row: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            println!("{}", row.join(" "));
        }
        println!("```\n");
    }
}
