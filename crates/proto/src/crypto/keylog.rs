//! The key log: a connection's raw packet keys, kept only when the driver
//! asks (`Endpoint::set_key_log`), so that a packet capture of it can be
//! decrypted — in the spirit of NSS's `SSLKEYLOGFILE`. A debugging aid:
//! whoever has the lines reads the traffic (docs/security.md).
//!
//! ring's AEAD keys cannot be read back, so the material is copied at
//! derivation (`noise::packet_keys`) and, without a key log, dropped
//! there: no field, no branch on the packet path.
//!
//! # Line format
//!
//! Four lines per connection, each `LABEL CLIENT_EPHEMERAL SECRET`
//! (single spaces, lower-case hex, `\n`-terminated):
//!
//! ```text
//! SLTP_CLIENT_TRAFFIC_KEY <client ephemeral, 64 hex> <key, 32 or 64 hex>
//! SLTP_CLIENT_TRAFFIC_IV  <client ephemeral, 64 hex> <IV, 24 hex>
//! SLTP_SERVER_TRAFFIC_KEY …
//! SLTP_SERVER_TRAFFIC_IV  …
//! ```
//!
//! * `CLIENT_EPHEMERAL` names the connection, as the client random does in
//!   `SSLKEYLOGFILE`: the client's Noise ephemeral public key, the first
//!   32 bytes of Noise message 1, which a capture shows in the clear in
//!   the START's SECURITY TLV (after its mode byte). Unique per
//!   connection, and the same in the client's and the server's log.
//! * `CLIENT` keys seal what the client sends, `SERVER` keys what the
//!   server sends. The key is exactly the AEAD key: 16 bytes for
//!   AES-128-GCM, 32 for ChaCha20-Poly1305 (the length names the AEAD).
//! * Nonce of a packet: the IV XOR the 64-bit packet number, big-endian,
//!   right-aligned (`aead.rs`); associated data: the 24 bytes of header
//!   and packet number as captured; the last 16 bytes are the tag.
//! * **Key updates** (docs/security.md, "Key update"): each new key
//!   generation `N` ≥ 1 adds two lines, `SLTP_CLIENT_TRAFFIC_KEY_N` and
//!   `SLTP_SERVER_TRAFFIC_KEY_N` (same fields); the IVs never change, so
//!   generation 0's IV lines serve every generation. A packet belongs to
//!   the generation its sender announced with a KEY_UPDATE before it
//!   (docs/protocol.md §6.7.2); a reader without the announcements tries
//!   the generations in turn. Lines starting with `#` and blank lines are
//!   comments ([`KeyLogLine::parse`] skips them).

use super::aead::AeadAlgorithm;
use super::noise::DerivedKeys;
use super::KEY_LEN;

/// Length of a packet IV.
pub const IV_LEN: usize = 12;

/// A connection's packet key material, both directions, as a key log
/// writes it. `Debug` prints no secret.
#[derive(Clone, PartialEq, Eq)]
pub struct PacketKeyMaterial {
    /// The packet AEAD the handshake agreed on.
    pub aead: AeadAlgorithm,
    /// The client's Noise ephemeral public key: the connection's name in
    /// the log (see the module docs).
    pub client_ephemeral: [u8; KEY_LEN],
    /// The key generation (0: the handshake's keys; N: after N key
    /// updates).
    pub generation: u64,
    keys: DerivedKeys,
}

impl PacketKeyMaterial {
    pub(crate) fn new(
        aead: AeadAlgorithm,
        client_ephemeral: [u8; KEY_LEN],
        keys: DerivedKeys,
    ) -> PacketKeyMaterial {
        PacketKeyMaterial {
            aead,
            client_ephemeral,
            generation: 0,
            keys,
        }
    }

    /// Generation `generation`'s traffic secrets and the (unchanging)
    /// IVs; its lines leave the IVs out (generation 0 wrote them).
    pub(crate) fn generation(
        aead: AeadAlgorithm,
        client_ephemeral: [u8; KEY_LEN],
        generation: u64,
        keys: DerivedKeys,
    ) -> PacketKeyMaterial {
        PacketKeyMaterial {
            aead,
            client_ephemeral,
            generation,
            keys,
        }
    }

    /// The key sealing what the client sends ([`AeadAlgorithm::key_len`]
    /// bytes).
    pub fn client_key(&self) -> &[u8] {
        &self.keys.c2s_key[..self.aead.key_len()]
    }

    /// The IV of what the client sends.
    pub fn client_iv(&self) -> &[u8; IV_LEN] {
        &self.keys.c2s_iv
    }

    /// The key sealing what the server sends.
    pub fn server_key(&self) -> &[u8] {
        &self.keys.s2c_key[..self.aead.key_len()]
    }

    /// The IV of what the server sends.
    pub fn server_iv(&self) -> &[u8; IV_LEN] {
        &self.keys.s2c_iv
    }

    /// The key-log lines of this generation, each ending in `\n` (one
    /// `String`, so a writer appends them in one write): four for
    /// generation 0, the two `_N` key lines for a later one. O(1).
    pub fn key_log_lines(&self) -> String {
        let id = hex(&self.client_ephemeral);
        let mut s = String::with_capacity(4 * (32 + 65 + 65));
        let lines = [
            (KeyLogLabel::ClientTrafficKey, self.client_key()),
            (KeyLogLabel::ClientTrafficIv, &self.keys.c2s_iv[..]),
            (KeyLogLabel::ServerTrafficKey, self.server_key()),
            (KeyLogLabel::ServerTrafficIv, &self.keys.s2c_iv[..]),
        ];
        for (label, secret) in lines {
            let is_key = matches!(
                label,
                KeyLogLabel::ClientTrafficKey | KeyLogLabel::ServerTrafficKey
            );
            if self.generation > 0 && !is_key {
                continue;
            }
            s.push_str(label.name());
            if self.generation > 0 {
                s.push('_');
                s.push_str(&self.generation.to_string());
            }
            s.push(' ');
            s.push_str(&id);
            s.push(' ');
            s.push_str(&hex(secret));
            s.push('\n');
        }
        s
    }
}

impl std::fmt::Debug for PacketKeyMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PacketKeyMaterial {{ aead: {}, client_ephemeral: {}, generation: {}, keys: <redacted> }}",
            self.aead,
            hex(&self.client_ephemeral),
            self.generation
        )
    }
}

/// The label of a key-log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyLogLabel {
    /// `SLTP_CLIENT_TRAFFIC_KEY`: the AEAD key of client-to-server packets.
    ClientTrafficKey,
    /// `SLTP_CLIENT_TRAFFIC_IV`: their IV.
    ClientTrafficIv,
    /// `SLTP_SERVER_TRAFFIC_KEY`: the AEAD key of server-to-client packets.
    ServerTrafficKey,
    /// `SLTP_SERVER_TRAFFIC_IV`: their IV.
    ServerTrafficIv,
}

impl KeyLogLabel {
    /// Every label, in the order a connection's lines are written.
    pub const ALL: [KeyLogLabel; 4] = [
        KeyLogLabel::ClientTrafficKey,
        KeyLogLabel::ClientTrafficIv,
        KeyLogLabel::ServerTrafficKey,
        KeyLogLabel::ServerTrafficIv,
    ];

    /// The label as written.
    pub const fn name(self) -> &'static str {
        match self {
            KeyLogLabel::ClientTrafficKey => "SLTP_CLIENT_TRAFFIC_KEY",
            KeyLogLabel::ClientTrafficIv => "SLTP_CLIENT_TRAFFIC_IV",
            KeyLogLabel::ServerTrafficKey => "SLTP_SERVER_TRAFFIC_KEY",
            KeyLogLabel::ServerTrafficIv => "SLTP_SERVER_TRAFFIC_IV",
        }
    }

    /// The label of a name ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<KeyLogLabel> {
        KeyLogLabel::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// One parsed key-log line.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyLogLine {
    /// What the secret is.
    pub label: KeyLogLabel,
    /// The connection: the client's Noise ephemeral public key.
    pub client_ephemeral: [u8; KEY_LEN],
    /// The key generation (0 without a `_N` suffix on the label).
    pub generation: u64,
    /// The key (16 or 32 bytes) or IV (12 bytes).
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for KeyLogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "KeyLogLine {{ label: {}, generation: {}, client_ephemeral: {}, secret: <redacted> }}",
            self.label.name(),
            self.generation,
            hex(&self.client_ephemeral)
        )
    }
}

/// Why a key-log line did not parse; the message names the bad field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key log line: {field}: {problem}")]
pub struct KeyLogError {
    /// The field: `label`, `client_ephemeral`, `secret` or `line`.
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl KeyLogLine {
    /// Parses one line (its `\n` may be there or not). `Ok(None)`: a
    /// comment (`#`) or blank line. A key must be 16 or 32 bytes, an IV
    /// 12. O(line).
    pub fn parse(line: &str) -> Result<Option<KeyLogLine>, KeyLogError> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let err = |field, problem| KeyLogError { field, problem };
        let mut fields = line.split_ascii_whitespace();
        let (Some(label), Some(id), Some(secret), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(err("line", "must be LABEL CLIENT_EPHEMERAL SECRET"));
        };
        let (label, generation) = match KeyLogLabel::from_name(label) {
            Some(l) => (l, 0),
            None => {
                let (name, n) = label
                    .rsplit_once('_')
                    .ok_or(err("label", "unknown label"))?;
                let l = KeyLogLabel::from_name(name).ok_or(err("label", "unknown label"))?;
                if !matches!(
                    l,
                    KeyLogLabel::ClientTrafficKey | KeyLogLabel::ServerTrafficKey
                ) {
                    return Err(err("label", "only key labels take a generation"));
                }
                let g = n
                    .parse::<u64>()
                    .ok()
                    .filter(|g| *g > 0 && n.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or(err("label", "generation must be a number from 1"))?;
                (l, g)
            }
        };
        let id = unhex(id).ok_or(err("client_ephemeral", "not hex"))?;
        let client_ephemeral = <[u8; KEY_LEN]>::try_from(id)
            .map_err(|_| err("client_ephemeral", "must be 32 bytes (64 hex digits)"))?;
        let secret = unhex(secret).ok_or(err("secret", "not hex"))?;
        let ok = match label {
            KeyLogLabel::ClientTrafficKey | KeyLogLabel::ServerTrafficKey => AeadAlgorithm::ALL
                .iter()
                .any(|a| a.key_len() == secret.len()),
            KeyLogLabel::ClientTrafficIv | KeyLogLabel::ServerTrafficIv => secret.len() == IV_LEN,
        };
        if !ok {
            return Err(err(
                "secret",
                "wrong length (a key is 16 or 32 bytes, an IV 12)",
            ));
        }
        Ok(Some(KeyLogLine {
            label,
            client_ephemeral,
            generation,
            secret,
        }))
    }

    /// The AEAD a key line's key is for (by its length); `None` for an
    /// IV line.
    pub fn aead(&self) -> Option<AeadAlgorithm> {
        match self.label {
            KeyLogLabel::ClientTrafficKey | KeyLogLabel::ServerTrafficKey => AeadAlgorithm::ALL
                .into_iter()
                .find(|a| a.key_len() == self.secret.len()),
            _ => None,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn material(aead: AeadAlgorithm) -> PacketKeyMaterial {
        PacketKeyMaterial::new(
            aead,
            [0xab; KEY_LEN],
            DerivedKeys {
                c2s_key: [1; 32],
                c2s_iv: [2; 12],
                s2c_key: [3; 32],
                s2c_iv: [4; 12],
            },
        )
    }

    #[test]
    fn lines_round_trip_through_the_parser() {
        for aead in AeadAlgorithm::ALL {
            let m = material(aead);
            let text = m.key_log_lines();
            assert!(text.ends_with('\n'));
            let lines: Vec<KeyLogLine> = text
                .lines()
                .map(|l| KeyLogLine::parse(l).unwrap().unwrap())
                .collect();
            assert_eq!(
                lines.iter().map(|l| l.label).collect::<Vec<_>>(),
                KeyLogLabel::ALL
            );
            assert!(lines.iter().all(|l| l.client_ephemeral == [0xab; 32]));
            assert_eq!(lines[0].secret, m.client_key());
            assert_eq!(lines[0].secret.len(), aead.key_len());
            assert_eq!(lines[0].aead(), Some(aead));
            assert_eq!(lines[1].secret, [2; 12]);
            assert_eq!(lines[1].aead(), None);
            assert_eq!(lines[2].secret, m.server_key());
            assert_eq!(lines[3].secret, [4; 12]);
        }
    }

    #[test]
    fn the_exact_line_format() {
        let text = material(AeadAlgorithm::Aes128Gcm).key_log_lines();
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "SLTP_CLIENT_TRAFFIC_KEY {} {}",
                "ab".repeat(32),
                "01".repeat(16)
            )
        );
        assert_eq!(
            text.lines().nth(3).unwrap(),
            format!(
                "SLTP_SERVER_TRAFFIC_IV {} {}",
                "ab".repeat(32),
                "04".repeat(12)
            )
        );
    }

    #[test]
    fn bad_lines_name_the_bad_field() {
        let id = "ab".repeat(32);
        let cases = [
            ("SLTP_CLIENT_TRAFFIC_KEY", "line"),
            (&*format!("CLIENT_RANDOM {id} {}", "00".repeat(16)), "label"),
            (
                &*format!(
                    "SLTP_CLIENT_TRAFFIC_KEY {} {}",
                    "ab".repeat(31),
                    "00".repeat(16)
                ),
                "client_ephemeral",
            ),
            (
                &*format!("SLTP_CLIENT_TRAFFIC_KEY zz{id} 00"),
                "client_ephemeral",
            ),
            (
                &*format!("SLTP_CLIENT_TRAFFIC_KEY {id} {}", "00".repeat(12)),
                "secret",
            ),
            (
                &*format!("SLTP_SERVER_TRAFFIC_IV {id} {}", "00".repeat(16)),
                "secret",
            ),
            (&*format!("SLTP_SERVER_TRAFFIC_IV {id} 0g"), "secret"),
            (&*format!("SLTP_SERVER_TRAFFIC_IV {id} 00 extra"), "line"),
        ];
        for (line, field) in cases {
            let e = KeyLogLine::parse(line).unwrap_err();
            assert_eq!(e.field, field, "{line}");
            assert!(e.to_string().contains(field));
        }
        assert_eq!(KeyLogLine::parse("# a comment").unwrap(), None);
        assert_eq!(KeyLogLine::parse("  \n").unwrap(), None);
    }

    #[test]
    fn later_generations_write_and_parse_key_lines_only() {
        let m = PacketKeyMaterial::generation(
            AeadAlgorithm::Aes128Gcm,
            [0xab; KEY_LEN],
            17,
            DerivedKeys {
                c2s_key: [5; 32],
                c2s_iv: [2; 12],
                s2c_key: [6; 32],
                s2c_iv: [4; 12],
            },
        );
        let text = m.key_log_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            format!(
                "SLTP_CLIENT_TRAFFIC_KEY_17 {} {}",
                "ab".repeat(32),
                "05".repeat(16)
            )
        );
        let l = KeyLogLine::parse(lines[1]).unwrap().unwrap();
        assert_eq!(
            (l.label, l.generation, l.secret.clone()),
            (KeyLogLabel::ServerTrafficKey, 17, vec![6; 16])
        );
        let id = "ab".repeat(32);
        for bad in [
            format!("SLTP_CLIENT_TRAFFIC_IV_3 {id} {}", "00".repeat(12)),
            format!("SLTP_CLIENT_TRAFFIC_KEY_0 {id} {}", "00".repeat(16)),
            format!("SLTP_CLIENT_TRAFFIC_KEY_x {id} {}", "00".repeat(16)),
            format!("SLTP_CLIENT_TRAFFIC_KEY_+3 {id} {}", "00".repeat(16)),
        ] {
            assert_eq!(KeyLogLine::parse(&bad).unwrap_err().field, "label", "{bad}");
        }
    }

    #[test]
    fn debug_prints_no_secret() {
        let m = material(AeadAlgorithm::ChaCha20Poly1305);
        let d = format!("{m:?}");
        assert!(!d.contains("0101") && !d.contains("0303") && d.contains("redacted"));
        let line = KeyLogLine::parse(m.key_log_lines().lines().next().unwrap())
            .unwrap()
            .unwrap();
        assert!(!format!("{line:?}").contains("0101"));
    }
}
