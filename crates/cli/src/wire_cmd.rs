//! `peregrine wire encode|decode`: one SLTP datagram between hex and JSON.
//!
//! The JSON shape is documented in docs/protocol.md ("JSON form"); the
//! `header` field names are a contract. Errors are one line on stderr
//! naming the problem, and the exit status is 2.

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use peregrine_proto::wire::*;
use serde_json::{json, Map, Value};

/// Arguments of `peregrine wire`.
#[derive(Args, Debug)]
pub struct WireArgs {
    #[command(subcommand)]
    command: WireCommand,
}

#[derive(Subcommand, Debug)]
enum WireCommand {
    /// Decode one datagram given as hex and print it as JSON.
    Decode {
        /// The datagram, hex (whitespace and a leading 0x are ignored).
        hex: String,
    },
    /// Encode one datagram given as JSON and print it as lower-case hex.
    Encode {
        /// The datagram, JSON: {"header": {...}, "payload": {...}}.
        json: String,
    },
}

/// Run `peregrine wire`. Errors are printed here as one line (never with
/// a backtrace, whatever RUST_BACKTRACE says) and exit with status 2.
pub fn run(args: WireArgs) -> Result<()> {
    if let Err(e) = run_inner(args) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    Ok(())
}

fn run_inner(args: WireArgs) -> Result<()> {
    match args.command {
        WireCommand::Decode { hex } => {
            let bytes = parse_hex(&hex)?;
            let d = DatagramRepr::decode(&bytes).map_err(|e| anyhow!("cannot decode: {e}"))?;
            println!("{}", serde_json::to_string_pretty(&datagram_json(&d))?);
        }
        WireCommand::Encode { json } => println!("{}", to_hex(&encode_json(&json)?)),
    }
    Ok(())
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    let s = s.trim();
    let s = s.strip_prefix("0x").unwrap_or(s);
    let digits: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some((i, c)) = digits
        .iter()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        bail!("invalid hex: {c:?} at digit {i} is not a hex digit");
    }
    if !digits.len().is_multiple_of(2) {
        bail!("invalid hex: odd number of digits ({})", digits.len());
    }
    Ok(digits
        .chunks(2)
        .map(|p| {
            let hi = p[0].to_digit(16).unwrap_or(0);
            let lo = p[1].to_digit(16).unwrap_or(0);
            (hi * 16 + lo) as u8
        })
        .collect())
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------- decode

fn datagram_json(d: &DatagramRepr<'_>) -> Value {
    let h = &d.header;
    json!({
        "header": {
            "dest_id": h.dest_id,
            "src_id": h.src_id,
            "pk_type": h.pk_type.name(),
            "pri": h.pri,
            "cn": h.cn,
            "flags": h.flags.names().collect::<Vec<_>>(),
            "chksum": h.chksum,
            "total_len": h.total_len,
            "pblock": h.pblock,
            "tblock": h.tblock,
            "mess_seq_no": h.mess_seq_no,
            "mess_acc_no": h.mess_acc_no,
            "sync_no": h.sync_no,
            "window_size": h.window_size,
        },
        "payload": payload_json(&d.payload),
    })
}

fn payload_json(p: &Payload<'_>) -> Value {
    match p {
        Payload::Start(s) => json!({ "tlvs": tlvs_json(&s.tlvs) }),
        Payload::Reject(r) => json!({
            "reason": code_json(r.reason.0, r.reason.name()),
            "tlvs": tlvs_json(&r.tlvs),
        }),
        Payload::Data(d) => json!({
            "packet_number": d.packet_number,
            "frames": d.frames.iter().map(|f| json!({
                "stream_id": f.stream_id,
                "message_number": f.message_number,
                "block_index": f.block_index,
                "block_count": f.block_count,
                "end_of_message": f.is_end_of_message(),
                "reliability": f.reliability.name(),
                "data": to_hex(f.data),
            })).collect::<Vec<_>>(),
        }),
        Payload::Ack(a) => {
            let mut v = json!({
                "packet_number": a.packet_number,
                "largest_acked": a.largest_acked,
                "ack_delay_us": a.ack_delay_us,
                "first_range": a.first_range,
                "ranges": a.ranges.iter()
                    .map(|r| json!({ "gap": r.gap, "length": r.length }))
                    .collect::<Vec<_>>(),
            });
            // The credit section is optional: shown only when present.
            if !a.credits.is_empty() {
                v["credits"] = a
                    .credits
                    .iter()
                    .map(|c| json!({ "stream_id": c.stream, "max_message": c.max_message }))
                    .collect::<Vec<_>>()
                    .into();
            }
            // So is the ACK-frequency section.
            if let Some(f) = a.frequency {
                v["frequency"] = json!({
                    "sequence": f.sequence,
                    "threshold": f.threshold,
                    "max_ack_delay_us": f.max_ack_delay_us,
                });
            }
            // And the ECN section.
            if let Some(e) = a.ecn {
                v["ecn"] = json!({ "ect0": e.ect0, "ect1": e.ect1, "ce": e.ce });
            }
            v
        }
        Payload::Nack(n) => json!({
            "packet_number": n.packet_number,
            "missing_packets": n.missing_packets.iter()
                .map(|m| json!({ "first": m.first, "count": m.count }))
                .collect::<Vec<_>>(),
            "missing_blocks": n.missing_blocks.iter().map(|b| json!({
                "stream_id": b.stream_id,
                "message_number": b.message_number,
                "block_index": b.block_index,
            })).collect::<Vec<_>>(),
        }),
        Payload::Echo(e) => json!({
            "packet_number": e.packet_number,
            "probe_id": e.probe_id,
            "timestamp_ns": e.timestamp_ns,
            "arrival_ns": e.arrival_ns,
            "padding_len": e.padding_len,
        }),
        Payload::Cwin(c) => json!({
            "packet_number": c.packet_number,
            "window_bytes": c.window_bytes,
            "reason": code_json(c.reason.0, c.reason.name()),
        }),
        Payload::Group(g) => json!({ "packet_number": g.packet_number, "group_id": g.group_id }),
        Payload::Bare(b) => json!({ "packet_number": b.packet_number }),
    }
}

/// A reason code: its name if it has one, else the number.
fn code_json(code: u8, name: Option<&str>) -> Value {
    name.map_or_else(|| json!(code), |n| json!(n))
}

fn tlvs_json(tlvs: &[Tlv<'_>]) -> Value {
    tlvs.iter()
        .map(|t| match t {
            Tlv::Version(v) => json!({ "version": v }),
            Tlv::WindowScale(s) => json!({ "window_scale": s }),
            Tlv::MaxPacketSize(s) => json!({ "max_packet_size": s }),
            Tlv::Controller(c) => json!({ "controller": c }),
            Tlv::StartupMode(m) => json!({ "startup_mode": m.name() }),
            Tlv::Security(v) => json!({ "security": to_hex(v) }),
            Tlv::StreamCredit(c) => json!({ "stream_credit": c }),
            Tlv::RetryToken(v) => json!({ "retry_token": to_hex(v) }),
            Tlv::Padding(n) => json!({ "padding": n }),
            Tlv::Aead(v) => json!({ "aead": to_hex(v) }),
            Tlv::StatelessReset => json!({ "stateless_reset": true }),
            Tlv::Unknown { tlv_type, value } => {
                json!({ "unknown": { "type": tlv_type, "value": to_hex(value) } })
            }
        })
        .collect()
}

// ---------------------------------------------------------------- encode

/// A JSON object being read, with its path for messages.
struct Obj<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: impl Into<String>, keys: &[&str]) -> Result<Obj<'a>> {
        let path = path.into();
        let map = v
            .as_object()
            .ok_or_else(|| anyhow!("{path} must be a JSON object"))?;
        if let Some(k) = map.keys().find(|k| !keys.contains(&k.as_str())) {
            bail!("unknown field {path}.{k}");
        }
        Ok(Obj { path, map })
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// An unsigned integer field, 0 when left out.
    fn num(&self, key: &str, max: u64) -> Result<u64> {
        self.num_or(key, max, 0)
    }

    fn num_or(&self, key: &str, max: u64, default: u64) -> Result<u64> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let n = v
            .as_u64()
            .ok_or_else(|| anyhow!("{}.{key} must be an unsigned integer", self.path))?;
        if n > max {
            bail!("{}.{key} is {n}, more than its maximum {max}", self.path);
        }
        Ok(n)
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>> {
        self.get(key)
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| anyhow!("{}.{key} must be a string", self.path))
            })
            .transpose()
    }

    /// A hex string field, empty when left out.
    fn hex(&self, key: &str) -> Result<&'static [u8]> {
        let s = self.str(key)?.unwrap_or("");
        let bytes = parse_hex(s).map_err(|e| anyhow!("{}.{key}: {e}", self.path))?;
        Ok(leak(bytes))
    }

    fn list(&self, key: &str) -> Result<&'a [Value]> {
        match self.get(key) {
            None => Ok(&[]),
            Some(v) => v
                .as_array()
                .map(Vec::as_slice)
                .ok_or_else(|| anyhow!("{}.{key} must be a JSON array", self.path)),
        }
    }

    /// A reason code given as a name or a number.
    fn code(&self, key: &str, from_name: impl Fn(&str) -> Option<u8>) -> Result<u8> {
        match self.get(key) {
            Some(Value::String(name)) => from_name(name)
                .ok_or_else(|| anyhow!("{}.{key}: unknown reason {name:?}", self.path)),
            _ => Ok(self.num(key, 255)? as u8),
        }
    }
}

/// The decoded forms borrow their byte strings; this one-shot command
/// leaks the few it parses instead of threading an arena through.
fn leak(v: Vec<u8>) -> &'static [u8] {
    Box::leak(v.into_boxed_slice())
}

const HEADER_KEYS: [&str; 14] = [
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
    "window_size",
];

fn encode_json(text: &str) -> Result<Vec<u8>> {
    let v: Value = serde_json::from_str(text).map_err(|e| anyhow!("invalid JSON: {e}"))?;
    let top = Obj::new(&v, "datagram", &["header", "payload"])?;
    let hv = top
        .get("header")
        .ok_or_else(|| anyhow!("missing field header"))?;
    let h = Obj::new(hv, "header", &HEADER_KEYS)?;
    let header = header_from(&h)?;
    let payload = match top.get("payload") {
        Some(p) => payload_from(header.pk_type, p)?,
        None => Payload::empty(header.pk_type).ok_or_else(|| {
            anyhow!(
                "missing field payload: a {} payload cannot be empty",
                header.pk_type
            )
        })?,
    };
    let d = DatagramRepr {
        header,
        payload,
        auth_tag: &[],
    };
    let mut buf = vec![0u8; d.buffer_len()];
    let n = d
        .emit(&mut buf)
        .map_err(|e| anyhow!("cannot encode: {e}"))?;
    buf.truncate(n);
    let carried = Header::new_checked(&buf[..])?;
    if h.get("total_len").is_some() && carried.total_len() != header.total_len {
        bail!(
            "header.total_len is {} but the datagram is {n} bytes",
            header.total_len
        );
    }
    if h.get("chksum").is_some() && carried.chksum() != header.chksum {
        bail!(
            "header.chksum is {:#06x} but the datagram's checksum is {:#06x}",
            header.chksum,
            carried.chksum()
        );
    }
    Ok(buf)
}

fn header_from(h: &Obj<'_>) -> Result<HeaderRepr> {
    let name = h
        .str("pk_type")?
        .ok_or_else(|| anyhow!("missing field header.pk_type"))?;
    let pk_type = PacketType::from_name(name)
        .ok_or_else(|| anyhow!("header.pk_type: unknown packet type {name:?}"))?;
    let mut flags = Flags::EMPTY;
    for f in h.list("flags")? {
        let n = f
            .as_str()
            .ok_or_else(|| anyhow!("header.flags must list flag names"))?;
        flags = flags
            | Flags::from_name(n).ok_or_else(|| anyhow!("header.flags: unknown flag {n:?}"))?;
    }
    let u8m = u64::from(u8::MAX);
    let u16m = u64::from(u16::MAX);
    Ok(HeaderRepr {
        dest_id: h.num("dest_id", u16m)? as u16,
        src_id: h.num("src_id", u16m)? as u16,
        pk_type,
        pri: h.num("pri", 3)? as u8,
        cn: h.num("cn", 3)? as u8,
        flags,
        chksum: h.num("chksum", u16m)? as u16,
        total_len: h.num("total_len", u16m)? as u16,
        pblock: h.num("pblock", u8m)? as u8,
        tblock: h.num("tblock", u8m)? as u8,
        mess_seq_no: h.num("mess_seq_no", u16m)? as u16,
        mess_acc_no: h.num("mess_acc_no", u16m)? as u16,
        sync_no: h.num("sync_no", 0x0fff)? as u16,
        window_size: h.num("window_size", 0x000f_ffff)? as u32,
    })
}

const U32: u64 = u32::MAX as u64;
const U16: u64 = u16::MAX as u64;

fn payload_from(t: PacketType, v: &Value) -> Result<Payload<'static>> {
    use PacketType as T;
    let keys: &[&str] = match t {
        T::Start => &["tlvs"],
        T::Reject => &["reason", "tlvs"],
        T::Data => &["packet_number", "frames"],
        T::Ack => &[
            "packet_number",
            "largest_acked",
            "ack_delay_us",
            "first_range",
            "ranges",
            "credits",
            "frequency",
            "ecn",
        ],
        T::Nack => &["packet_number", "missing_packets", "missing_blocks"],
        T::Echo | T::Echo1 | T::Echo2 => &[
            "packet_number",
            "probe_id",
            "timestamp_ns",
            "arrival_ns",
            "padding_len",
        ],
        T::Cwin => &["packet_number", "window_bytes", "reason"],
        T::Join | T::Leave => &["packet_number", "group_id"],
        T::End | T::Fin | T::Idle | T::Status => &["packet_number"],
    };
    let p = Obj::new(v, "payload", keys)?;
    let pn = p.num("packet_number", U32)? as u32;
    Ok(match t {
        T::Start => Payload::Start(StartPayload {
            tlvs: tlvs_from(&p)?,
        }),
        T::Reject => Payload::Reject(RejectPayload {
            reason: RejectReason(p.code("reason", |n| RejectReason::from_name(n).map(|r| r.0))?),
            tlvs: tlvs_from(&p)?,
        }),
        T::Data => {
            let mut frames = Vec::new();
            for (i, f) in p.list("frames")?.iter().enumerate() {
                frames.push(frame_from(i, f)?);
            }
            Payload::Data(DataPayload {
                packet_number: pn,
                frames: frames.into(),
            })
        }
        T::Ack => {
            let mut ranges = Vec::new();
            for (i, r) in p.list("ranges")?.iter().enumerate() {
                let r = Obj::new(r, format!("payload.ranges[{i}]"), &["gap", "length"])?;
                let (gap, length) = (r.num("gap", U32)? as u32, r.num("length", U32)? as u32);
                ranges.push(AckRange { gap, length });
            }
            let mut credits = Vec::new();
            for (i, c) in p.list("credits")?.iter().enumerate() {
                let c = Obj::new(
                    c,
                    format!("payload.credits[{i}]"),
                    &["stream_id", "max_message"],
                )?;
                credits.push(StreamCredit {
                    stream: c.num("stream_id", u16::MAX.into())? as u16,
                    max_message: c.num("max_message", U32)? as u32,
                });
            }
            let ecn = match p.get("ecn") {
                None => None,
                Some(e) => {
                    let e = Obj::new(e, "payload.ecn", &["ect0", "ect1", "ce"])?;
                    Some(AckEcnCounts {
                        ect0: e.num("ect0", u64::MAX)?,
                        ect1: e.num("ect1", u64::MAX)?,
                        ce: e.num("ce", u64::MAX)?,
                    })
                }
            };
            let frequency = match p.get("frequency") {
                None => None,
                Some(f) => {
                    let f = Obj::new(
                        f,
                        "payload.frequency",
                        &["sequence", "threshold", "max_ack_delay_us"],
                    )?;
                    Some(AckFrequency {
                        sequence: f.num("sequence", U32)? as u32,
                        threshold: f.num("threshold", u16::MAX.into())? as u16,
                        max_ack_delay_us: f.num("max_ack_delay_us", U32)? as u32,
                    })
                }
            };
            Payload::Ack(AckPayload {
                packet_number: pn,
                largest_acked: p.num("largest_acked", u64::MAX)?,
                ack_delay_us: p.num("ack_delay_us", U32)? as u32,
                first_range: p.num("first_range", U32)? as u32,
                ranges,
                credits,
                frequency,
                ecn,
            })
        }
        T::Nack => {
            let mut missing_packets = Vec::new();
            for (i, m) in p.list("missing_packets")?.iter().enumerate() {
                let m = Obj::new(
                    m,
                    format!("payload.missing_packets[{i}]"),
                    &["first", "count"],
                )?;
                missing_packets.push(MissingPackets {
                    first: m.num("first", u64::MAX)?,
                    count: m.num("count", U32)? as u32,
                });
            }
            let mut missing_blocks = Vec::new();
            for (i, b) in p.list("missing_blocks")?.iter().enumerate() {
                let keys = ["stream_id", "message_number", "block_index"];
                let b = Obj::new(b, format!("payload.missing_blocks[{i}]"), &keys)?;
                missing_blocks.push(MissingBlock {
                    stream_id: b.num("stream_id", U16)? as u16,
                    message_number: b.num("message_number", U32)? as u32,
                    block_index: b.num("block_index", U16)? as u16,
                });
            }
            Payload::Nack(NackPayload {
                packet_number: pn,
                missing_packets,
                missing_blocks,
            })
        }
        T::Echo | T::Echo1 | T::Echo2 => Payload::Echo(EchoPayload {
            packet_number: pn,
            probe_id: p.num("probe_id", U32)? as u32,
            timestamp_ns: p.num("timestamp_ns", u64::MAX)?,
            arrival_ns: match p.get("arrival_ns") {
                None | Some(Value::Null) => None,
                Some(_) => Some(p.num("arrival_ns", u64::MAX)?),
            },
            padding_len: p.num("padding_len", U16)? as u16,
        }),
        T::Cwin => Payload::Cwin(CwinPayload {
            packet_number: pn,
            window_bytes: p.num("window_bytes", U32)? as u32,
            reason: CwinReason(p.code("reason", |n| CwinReason::from_name(n).map(|r| r.0))?),
        }),
        T::Join | T::Leave => Payload::Group(GroupPayload {
            packet_number: pn,
            group_id: p.num("group_id", U32)? as u32,
        }),
        T::End | T::Fin | T::Idle | T::Status => Payload::Bare(BarePayload { packet_number: pn }),
    })
}

fn frame_from(i: usize, v: &Value) -> Result<StreamFrame<'static>> {
    let keys = [
        "stream_id",
        "message_number",
        "block_index",
        "block_count",
        "end_of_message",
        "reliability",
        "data",
    ];
    let f = Obj::new(v, format!("payload.frames[{i}]"), &keys)?;
    let reliability = match f.str("reliability")? {
        None => Reliability::Reliable,
        Some(n) => Reliability::from_name(n)
            .ok_or_else(|| anyhow!("{}.reliability: unknown reliability {n:?}", f.path))?,
    };
    let frame = StreamFrame {
        stream_id: f.num("stream_id", U16)? as u16,
        message_number: f.num("message_number", U32)? as u32,
        block_index: f.num("block_index", U16)? as u16,
        block_count: f.num_or("block_count", U16, 1)? as u16,
        reliability,
        data: f.hex("data")?,
    };
    if let Some(eom) = f.get("end_of_message") {
        let eom = eom
            .as_bool()
            .ok_or_else(|| anyhow!("{}.end_of_message must be true or false", f.path))?;
        if eom != frame.is_end_of_message() {
            bail!(
                "{}.end_of_message is {eom} but block {} of {} decides it",
                f.path,
                frame.block_index,
                frame.block_count
            );
        }
    }
    Ok(frame)
}

fn tlvs_from(p: &Obj<'_>) -> Result<Vec<Tlv<'static>>> {
    let mut out = Vec::new();
    for (i, v) in p.list("tlvs")?.iter().enumerate() {
        let path = format!("payload.tlvs[{i}]");
        let keys = [
            "version",
            "window_scale",
            "max_packet_size",
            "controller",
            "startup_mode",
            "security",
            "stream_credit",
            "retry_token",
            "padding",
            "aead",
            "stateless_reset",
            "unknown",
        ];
        let t = Obj::new(v, path.clone(), &keys)?;
        let [(key, _)] = t.map.iter().collect::<Vec<_>>()[..] else {
            bail!("{path} must have exactly one field, the TLV's name");
        };
        out.push(match key.as_str() {
            "version" => Tlv::Version(t.num(key, U16)? as u16),
            "window_scale" => Tlv::WindowScale(t.num(key, 255)? as u8),
            "max_packet_size" => Tlv::MaxPacketSize(t.num(key, U16)? as u16),
            "controller" => {
                let name = t.str(key)?.unwrap_or("");
                Tlv::Controller(std::str::from_utf8(leak(name.as_bytes().to_vec()))?)
            }
            "startup_mode" => {
                let name = t.str(key)?.unwrap_or("");
                Tlv::StartupMode(
                    StartupMode::from_name(name)
                        .ok_or_else(|| anyhow!("{path}.startup_mode: unknown mode {name:?}"))?,
                )
            }
            "security" => Tlv::Security(t.hex(key)?),
            "stream_credit" => Tlv::StreamCredit(t.num(key, u64::from(u32::MAX))? as u32),
            "retry_token" => Tlv::RetryToken(t.hex(key)?),
            "padding" => Tlv::Padding(t.num(key, U16)? as u16),
            "aead" => Tlv::Aead(t.hex(key)?),
            "stateless_reset" => Tlv::StatelessReset,
            _ => {
                let u = Obj::new(&t.map[key], format!("{path}.unknown"), &["type", "value"])?;
                Tlv::Unknown {
                    tlv_type: u.num("type", 255)? as u8,
                    value: u.hex("value")?,
                }
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_parsing() {
        assert_eq!(parse_hex("0x0a Ff").unwrap(), [0x0a, 0xff]);
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
    }
}
