//! `peregrine wire decode|encode`, run as the built binary.

use std::process::{Command, Output};

use serde_json::Value;

/// Vectors from docs/protocol.md (checked there by crates/proto/tests/vectors.rs).
const START: &str =
    "00000a0110c46afe002e0000000000005a30240001000200010200010403000205ac040005637562696305000101";
const START_REPLY: &str =
    "0a010b0210820000002a0000000000005a3010000100020001020001040400056375626963800002cafe";
const DATA_COALESCED: &str = "0b020a013020000000520001002900035a3000000000001100018000000029000000010006636d643a757000022000000004000100030004deadbeef0001c00000002a00000001000974656c656d65747279";
const ACK: &str = "0b020a0140810000003100000000000c5a3024000000002000000000000003e8000000fa0100000005000000010000000a";
const NACK: &str =
    "0b020a0150000000002e0000000000005a30000000000021010100000000000003e1000000020002000000040000";
const ECHO_1: &str =
    "0b020a0190040000002c0000000000005a30000000000041000000020000000059682f000000000000000000";
const CWIN: &str = "0b020a01d1800000001d0000000000005a300000000000600000000001";
const REJECT: &str = "0a01000020020000001a0000000000005a300000010100020001";
const JOIN: &str = "0b020a01e0040000001c0000000000005a30000000000070e0000001";
const FIN: &str = "0b020a017000000000180000000000005a30000000000031";

fn wire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peregrine"))
        .arg("wire")
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run peregrine")
}

fn ok(args: &[&str]) -> String {
    let out = wire(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn decode(hex: &str) -> Value {
    serde_json::from_str(&ok(&["decode", hex])).unwrap()
}

fn encode(json: &str) -> String {
    ok(&["encode", json]).trim().to_string()
}

/// Runs a command that must fail; returns its one-line message.
fn fails(args: &[&str]) -> String {
    let out = wire(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    err
}

#[test]
fn decode_prints_the_header_contract() {
    let v = decode(DATA_COALESCED);
    let h = v["header"].as_object().unwrap();
    let keys: Vec<&str> = h.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "dest_id",
            "src_id",
            "pk_type",
            "pri",
            "cn",
            "flags",
            "chksum",
            "total_len",
            "pblock",
            "tblock",
            "mess_seq_no",
            "mess_acc_no",
            "sync_no",
            "window_size"
        ]
    );
    assert_eq!(h["pk_type"], "DATA");
    assert_eq!(h["flags"], serde_json::json!(["ST_RTR"]));
    assert_eq!(h["total_len"], 82);
    assert_eq!(h["dest_id"], 0x0b02);
    assert_eq!(h["sync_no"], 0x5a3);
    assert_eq!(h["mess_seq_no"], 41);
    assert_eq!(h["tblock"], 1);
}

#[test]
fn decode_prints_coalesced_frames() {
    let v = decode(DATA_COALESCED);
    let p = &v["payload"];
    assert_eq!(p["packet_number"], 17);
    let frames = p["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0]["stream_id"], 1);
    assert_eq!(frames[0]["data"], "636d643a7570");
    assert_eq!(frames[1]["stream_id"], 2);
    assert_eq!(frames[1]["block_index"], 1);
    assert_eq!(frames[1]["block_count"], 3);
    assert_eq!(frames[1]["end_of_message"], false);
    assert_eq!(frames[1]["reliability"], "partial");
    assert_eq!(frames[2]["reliability"], "unreliable");
}

#[test]
fn decode_prints_tlvs_and_reasons() {
    let v = decode(START);
    assert_eq!(
        v["header"]["flags"],
        serde_json::json!(["W_VAL", "ST_CKS", "REPLY_REQ"])
    );
    assert_eq!(v["header"]["chksum"], 0x6afe);
    assert_eq!(
        v["payload"]["tlvs"],
        serde_json::json!([
            {"version": 1}, {"window_scale": 4}, {"max_packet_size": 1452},
            {"controller": "cubic"}, {"startup_mode": "packet_pair"}
        ])
    );
    let v = decode(START_REPLY);
    assert_eq!(
        v["payload"]["tlvs"][3],
        serde_json::json!({"unknown": {"type": 128, "value": "cafe"}})
    );
    assert_eq!(decode(REJECT)["payload"]["reason"], "version_unsupported");
    assert_eq!(decode(CWIN)["payload"]["reason"], "handover_start");
    assert_eq!(decode(ACK)["payload"]["ranges"][0]["length"], 10);
    assert_eq!(decode(NACK)["payload"]["missing_blocks"][0]["stream_id"], 2);
}

#[test]
fn encode_fills_in_defaults_length_and_checksum() {
    // IDLE and FIN may leave the payload out: packet number 0.
    assert_eq!(
        encode(r#"{"header": {"pk_type": "FIN"}}"#),
        "000000007000000000180000000000000000000000000000"
    );
    // ST_CKS set and chksum left out: computed.
    let hex = encode(r#"{"header": {"pk_type": "IDLE", "flags": ["ST_CKS"], "src_id": 1}}"#);
    let v = decode(&hex);
    assert_eq!(v["header"]["total_len"], 24);
    assert_ne!(v["header"]["chksum"], 0);
    let hex = encode(
        r#"{"header": {"pk_type": "DATA", "pri": 2},
            "payload": {"packet_number": 5, "frames": [{"stream_id": 3, "data": "abcd"}]}}"#,
    );
    let v = decode(&hex);
    assert_eq!(v["payload"]["frames"][0]["block_count"], 1);
    assert_eq!(v["payload"]["frames"][0]["end_of_message"], true);
    assert_eq!(v["header"]["pri"], 2);
}

#[test]
fn decode_then_encode_gives_back_the_bytes() {
    for hex in [
        START,
        START_REPLY,
        DATA_COALESCED,
        ACK,
        NACK,
        ECHO_1,
        CWIN,
        REJECT,
        JOIN,
        FIN,
    ] {
        let json = ok(&["decode", hex]);
        assert_eq!(encode(&json), hex);
    }
}

#[test]
fn decode_errors_name_the_problem() {
    let e = fails(&["decode", "0b020a01"]);
    assert!(e.contains("shorter than the 20-byte"), "{e}");
    let e = fails(&["decode", "0b020a010000000000180000000000005a30000000000031"]);
    assert!(e.contains("PK_TYPE 0 is reserved"), "{e}");
    let e = fails(&["decode", &format!("{FIN}00")]);
    assert!(
        e.contains("TOTAL_LEN is 24 but the datagram is 25 bytes"),
        "{e}"
    );
    // START carrying a TLV of the reserved type 0.
    let e = fails(&["decode", "00000a0110000000001700000000000000000000000000"]);
    assert!(e.contains("TLV type 0 is reserved"), "{e}");
    // START carrying a VERSION TLV with a 1-byte value.
    let e = fails(&["decode", "00000a011000000000180000000000000000000001000101"]);
    assert!(e.contains("VERSION TLV has a 1-byte value"), "{e}");
    let e = fails(&["decode", "00000a0110c40000002e"]);
    assert!(e.contains("shorter than the 20-byte"), "{e}");
    let mut bad = START.to_string();
    bad.replace_range(12..16, "0000");
    let e = fails(&["decode", &bad]);
    assert!(e.contains("CHKSUM is 0x0000"), "{e}");
    let e = fails(&["decode", "0xzz"]);
    assert!(e.contains("invalid hex"), "{e}");
    let e = fails(&["decode", "abc"]);
    assert!(e.contains("odd number"), "{e}");
}

#[test]
fn encode_errors_name_the_problem() {
    let e = fails(&["encode", "{"]);
    assert!(e.contains("invalid JSON"), "{e}");
    let e = fails(&["encode", r#"{"header": {"pk_type": "NOPE"}}"#]);
    assert!(e.contains("unknown packet type"), "{e}");
    let e = fails(&["encode", r#"{"header": {"pk_type": "DATA"}}"#]);
    assert!(e.contains("DATA payload cannot be empty"), "{e}");
    let e = fails(&["encode", r#"{"header": {"pk_type": "IDLE", "pri": 4}}"#]);
    assert!(
        e.contains("header.pri is 4, more than its maximum 3"),
        "{e}"
    );
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "IDLE", "total_len": 30}}"#,
    ]);
    assert!(
        e.contains("header.total_len is 30 but the datagram is 24 bytes"),
        "{e}"
    );
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "IDLE", "flags": ["ST_CKS"], "chksum": 1}}"#,
    ]);
    assert!(e.contains("header.chksum is 0x0001"), "{e}");
    let e = fails(&["encode", r#"{"header": {"pk_type": "IDLE", "flag": []}}"#]);
    assert!(e.contains("unknown field header.flag"), "{e}");
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "IDLE", "flags": ["NOPE"]}}"#,
    ]);
    assert!(e.contains("unknown flag"), "{e}");
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "START"}, "payload": {"tlvs": [{"window_scale": 13}]}}"#,
    ]);
    assert!(e.contains("WINDOW_SCALE TLV has an invalid value"), "{e}");
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "DATA"}, "payload": {"frames": [{"block_index": 1}]}}"#,
    ]);
    assert!(
        e.contains("block index 1 is not below block count 1"),
        "{e}"
    );
    let e = fails(&[
        "encode",
        r#"{"header": {"pk_type": "NACK"}, "payload": {}}"#,
    ]);
    assert!(e.contains("NACK names no missing packet"), "{e}");
}
