//! Static X25519 keys, pre-shared keys, and the security configuration a
//! connection is given (`ConnectionConfig::security`).
//!
//! Nothing here reads the OS: a keypair is made from 32 bytes the caller
//! supplies ([`StaticKeypair::from_private`]); the UDP runtime and
//! `peregrine keygen` draw them from OS entropy, tests and the simulator
//! from a seed.

use super::aead::AeadAlgorithm;
use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};

/// Length of an X25519 key and of a pre-shared key.
pub const KEY_LEN: usize = 32;
/// Length of a pre-shared key.
pub const PSK_LEN: usize = KEY_LEN;

/// A peer's static X25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey(pub [u8; KEY_LEN]);

impl PublicKey {
    /// The key in lower-case hex (64 characters).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads 64 hex digits (either case); `None` for anything else.
    pub fn from_hex(s: &str) -> Option<PublicKey> {
        let s = s.trim();
        if s.len() != 2 * KEY_LEN || !s.is_ascii() {
            return None;
        }
        let mut k = [0u8; KEY_LEN];
        for (i, b) in k.iter_mut().enumerate() {
            *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(PublicKey(k))
    }
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.to_hex())
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// A static X25519 keypair. `Debug` never prints the private half.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticKeypair {
    private: [u8; KEY_LEN],
    public: PublicKey,
}

impl StaticKeypair {
    /// The keypair of a private key. Any 32 bytes are a valid X25519
    /// private key (clamping happens in the scalar multiplication), so 32
    /// uniformly random bytes make a fresh keypair.
    pub fn from_private(private: [u8; KEY_LEN]) -> StaticKeypair {
        let mut public = [0u8; KEY_LEN];
        // DefaultResolver always resolves Curve25519 (snow's
        // `default-resolver` feature is on in Cargo.toml).
        if let Some(mut dh) = DefaultResolver.resolve_dh(&DHChoice::Curve25519) {
            dh.set(&private);
            public.copy_from_slice(dh.pubkey());
        }
        StaticKeypair {
            private,
            public: PublicKey(public),
        }
    }

    /// The public half.
    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// The private half (for writing a key file; keep it secret).
    pub fn private_bytes(&self) -> &[u8; KEY_LEN] {
        &self.private
    }
}

impl std::fmt::Debug for StaticKeypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "StaticKeypair {{ public: {}, private: <redacted> }}",
            self.public
        )
    }
}

/// The Noise handshake patterns Peregrine runs in START / START-REPLY
/// (suite `25519_ChaChaPoly_SHA256`). The SECURITY TLV's first byte names
/// the pattern ([`NoisePattern::mode_byte`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoisePattern {
    /// The client knows the server's static key: one round trip, both
    /// sides authenticated (the fleet's common case).
    IK,
    /// Neither knows the other's key: the third message rides in the
    /// client's first packet after START-REPLY.
    XX,
    /// IK plus a fleet-wide pre-shared key.
    IKpsk2,
    /// Only a fleet-wide pre-shared key (no static keys), with ephemeral
    /// Diffie-Hellman for forward secrecy.
    NNpsk0,
}

impl NoisePattern {
    /// Every pattern, in mode-byte order.
    pub const ALL: [NoisePattern; 4] = [
        NoisePattern::IK,
        NoisePattern::XX,
        NoisePattern::IKpsk2,
        NoisePattern::NNpsk0,
    ];

    /// The SECURITY TLV mode byte of this pattern.
    pub fn mode_byte(self) -> u8 {
        match self {
            NoisePattern::IK => 2,
            NoisePattern::XX => 3,
            NoisePattern::IKpsk2 => 4,
            NoisePattern::NNpsk0 => 5,
        }
    }

    /// The pattern of a SECURITY TLV mode byte.
    pub fn from_mode_byte(b: u8) -> Option<NoisePattern> {
        NoisePattern::ALL.into_iter().find(|p| p.mode_byte() == b)
    }

    /// The full Noise protocol name handed to `snow`.
    pub fn protocol_name(self) -> &'static str {
        match self {
            NoisePattern::IK => "Noise_IK_25519_ChaChaPoly_SHA256",
            NoisePattern::XX => "Noise_XX_25519_ChaChaPoly_SHA256",
            NoisePattern::IKpsk2 => "Noise_IKpsk2_25519_ChaChaPoly_SHA256",
            NoisePattern::NNpsk0 => "Noise_NNpsk0_25519_ChaChaPoly_SHA256",
        }
    }

    /// Whether the pattern needs this side's static keypair.
    pub fn needs_keypair(self) -> bool {
        !matches!(self, NoisePattern::NNpsk0)
    }

    /// Whether the client must know the server's static key beforehand.
    pub fn needs_server_key(self) -> bool {
        matches!(self, NoisePattern::IK | NoisePattern::IKpsk2)
    }

    /// Length of the SECURITY TLV value of a START (mode byte and Noise
    /// message 1 with its 32-byte binding payload): known before the
    /// message is written, for the anti-amplification budget.
    pub fn start_value_len(self) -> usize {
        // e (32); IK: encrypted s (32 + 16); the payload, encrypted (+16)
        // once a key exists (always but XX message 1).
        match self {
            NoisePattern::IK | NoisePattern::IKpsk2 => 1 + 32 + 48 + 48,
            NoisePattern::XX => 1 + 32 + 32,
            NoisePattern::NNpsk0 => 1 + 32 + 48,
        }
    }

    /// Length of the SECURITY TLV value of an accepting START-REPLY (mode
    /// byte and Noise message 2 with the binding payload).
    pub fn reply_value_len(self) -> usize {
        match self {
            // e; XX adds the server's encrypted static key (32 + 16).
            NoisePattern::XX => 1 + 32 + 48 + 48,
            NoisePattern::IK | NoisePattern::IKpsk2 | NoisePattern::NNpsk0 => 1 + 32 + 48,
        }
    }

    /// Whether the pattern mixes in a pre-shared key.
    pub fn needs_psk(self) -> bool {
        matches!(self, NoisePattern::IKpsk2 | NoisePattern::NNpsk0)
    }
}

/// Which packet AEAD a side offers (client) or accepts (server) — the
/// `aead` option of the security configuration (docs/security.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AeadPreference {
    /// Both AEADs; a client offers AES-128-GCM first when the endpoint
    /// says the CPU accelerates AES (`EndpointConfig::aes_hardware`, set by
    /// the UDP runtime: the sans-IO core never probes the CPU), else
    /// ChaCha20-Poly1305 first.
    #[default]
    Auto,
    /// Only AES-128-GCM.
    Aes128Gcm,
    /// Only ChaCha20-Poly1305.
    ChaCha20Poly1305,
}

impl AeadPreference {
    /// Every preference, as listed in configuration.
    pub const ALL: [AeadPreference; 3] = [
        AeadPreference::Auto,
        AeadPreference::Aes128Gcm,
        AeadPreference::ChaCha20Poly1305,
    ];

    /// The name in configuration and CLI flags: `auto`, `aes-128-gcm`,
    /// `chacha20-poly1305`.
    pub const fn name(self) -> &'static str {
        match self {
            AeadPreference::Auto => "auto",
            AeadPreference::Aes128Gcm => AeadAlgorithm::Aes128Gcm.name(),
            AeadPreference::ChaCha20Poly1305 => AeadAlgorithm::ChaCha20Poly1305.name(),
        }
    }

    /// The preference of a name ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<AeadPreference> {
        AeadPreference::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The client's offer, most preferred first, as the AEAD TLV value.
    pub fn offer(self, aes_hardware: bool) -> &'static [u8] {
        match self {
            AeadPreference::Auto if aes_hardware => &[1, 2],
            AeadPreference::Auto => &[2, 1],
            AeadPreference::Aes128Gcm => AeadAlgorithm::Aes128Gcm.choice(),
            AeadPreference::ChaCha20Poly1305 => AeadAlgorithm::ChaCha20Poly1305.choice(),
        }
    }

    /// Whether a side with this preference runs `aead`.
    pub fn allows(self, aead: AeadAlgorithm) -> bool {
        match self {
            AeadPreference::Auto => true,
            AeadPreference::Aes128Gcm => aead == AeadAlgorithm::Aes128Gcm,
            AeadPreference::ChaCha20Poly1305 => aead == AeadAlgorithm::ChaCha20Poly1305,
        }
    }

    /// Server: the AEAD to answer a START's AEAD TLV `offer` with — the
    /// first offered code this side allows (the client's preference wins;
    /// unknown codes are skipped). No TLV (`None`) offers
    /// ChaCha20-Poly1305 alone, the AEAD of version 1 before the TLV
    /// existed. `None`: nothing in common.
    pub fn select(self, offer: Option<&[u8]>) -> Option<AeadAlgorithm> {
        let offer = offer.unwrap_or(AeadAlgorithm::ChaCha20Poly1305.choice());
        offer
            .iter()
            .filter_map(|c| AeadAlgorithm::from_code(*c))
            .find(|a| self.allows(*a))
    }
}

/// A Noise configuration: what this side initiates (client) or accepts
/// (server), and the keys it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct NoiseConfig {
    /// Client: the first entry is the pattern it initiates. Server: the
    /// patterns it accepts; a START offering another is rejected with
    /// `security_required`.
    pub patterns: Vec<NoisePattern>,
    /// This side's static keypair (IK, XX, IKpsk2).
    pub keypair: Option<StaticKeypair>,
    /// Client: the server's static public key — required for IK and
    /// IKpsk2; for XX, if set, the server's key is pinned to it.
    pub peer_key: Option<PublicKey>,
    /// The fleet's pre-shared key (IKpsk2, NNpsk0).
    pub psk: Option<[u8; PSK_LEN]>,
    /// Server: the client static keys it accepts (`None`: any). Client:
    /// ignored (use `peer_key`).
    pub authorized_keys: Option<Vec<PublicKey>>,
    /// The packet AEADs this side offers (client) or accepts (server).
    pub aead: AeadPreference,
}

impl NoiseConfig {
    /// Client of `Noise_IK`: knows the server's key.
    pub fn ik(keypair: StaticKeypair, server_key: PublicKey) -> NoiseConfig {
        NoiseConfig {
            patterns: vec![NoisePattern::IK],
            keypair: Some(keypair),
            peer_key: Some(server_key),
            psk: None,
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// Client of `Noise_XX`: learns the server's key in the handshake.
    pub fn xx(keypair: StaticKeypair) -> NoiseConfig {
        NoiseConfig {
            patterns: vec![NoisePattern::XX],
            keypair: Some(keypair),
            peer_key: None,
            psk: None,
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// Client of `Noise_IKpsk2`.
    pub fn ik_psk2(
        keypair: StaticKeypair,
        server_key: PublicKey,
        psk: [u8; PSK_LEN],
    ) -> NoiseConfig {
        NoiseConfig {
            patterns: vec![NoisePattern::IKpsk2],
            keypair: Some(keypair),
            peer_key: Some(server_key),
            psk: Some(psk),
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// `Noise_NNpsk0`, either side: only the fleet secret.
    pub fn nn_psk0(psk: [u8; PSK_LEN]) -> NoiseConfig {
        NoiseConfig {
            patterns: vec![NoisePattern::NNpsk0],
            keypair: None,
            peer_key: None,
            psk: Some(psk),
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// Server with a static keypair: accepts `Noise_IK` and `Noise_XX`.
    pub fn server(keypair: StaticKeypair) -> NoiseConfig {
        NoiseConfig {
            patterns: vec![NoisePattern::IK, NoisePattern::XX],
            keypair: Some(keypair),
            peer_key: None,
            psk: None,
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// Server of a pre-shared-key fleet: accepts `Noise_IKpsk2` (if it has
    /// a keypair) and `Noise_NNpsk0`, nothing without the key.
    pub fn server_psk(keypair: Option<StaticKeypair>, psk: [u8; PSK_LEN]) -> NoiseConfig {
        let mut patterns = Vec::new();
        if keypair.is_some() {
            patterns.push(NoisePattern::IKpsk2);
        }
        patterns.push(NoisePattern::NNpsk0);
        NoiseConfig {
            patterns,
            keypair,
            peer_key: None,
            psk: Some(psk),
            authorized_keys: None,
            aead: AeadPreference::Auto,
        }
    }

    /// Accept only these client static keys (server).
    pub fn authorize(mut self, keys: Vec<PublicKey>) -> NoiseConfig {
        self.authorized_keys = Some(keys);
        self
    }

    /// Offer (client) or accept (server) these packet AEADs.
    pub fn with_aead(mut self, aead: AeadPreference) -> NoiseConfig {
        self.aead = aead;
        self
    }

    /// Whether the configuration can run as a client (`is_client`) or a
    /// server; the error names what is missing.
    pub fn validate(&self, is_client: bool) -> Result<(), &'static str> {
        let Some(first) = self.patterns.first() else {
            return Err("lists no Noise pattern");
        };
        if is_client && self.patterns.len() != 1 {
            return Err("must list exactly one Noise pattern for a client");
        }
        for p in &self.patterns {
            if p.needs_keypair() && self.keypair.is_none() {
                return Err("needs a static keypair for its Noise pattern");
            }
            if p.needs_psk() && self.psk.is_none() {
                return Err("needs a pre-shared key for its Noise pattern");
            }
        }
        if is_client && first.needs_server_key() && self.peer_key.is_none() {
            return Err("needs the server's public key for Noise_IK / Noise_IKpsk2");
        }
        Ok(())
    }
}

impl std::fmt::Debug for NoiseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoiseConfig")
            .field("patterns", &self.patterns)
            .field("keypair", &self.keypair)
            .field("peer_key", &self.peer_key)
            .field("psk", &self.psk.map(|_| "<redacted>"))
            .field("authorized_keys", &self.authorized_keys)
            .field("aead", &self.aead)
            .finish()
    }
}

/// How a connection protects its packets (`ConnectionConfig::security`;
/// `None` there is the unencrypted mode).
#[derive(Clone, PartialEq, Eq)]
pub enum SecurityConfig {
    /// Shorthand for `Noise_NNpsk0` with this fleet secret (both sides).
    PresharedKey([u8; PSK_LEN]),
    /// A Noise handshake.
    Noise(NoiseConfig),
}

impl SecurityConfig {
    /// The Noise configuration this stands for.
    pub fn noise(&self) -> NoiseConfig {
        match self {
            SecurityConfig::PresharedKey(psk) => NoiseConfig::nn_psk0(*psk),
            SecurityConfig::Noise(n) => n.clone(),
        }
    }

    /// Whether the configuration can run in this role.
    pub fn validate(&self, is_client: bool) -> Result<(), &'static str> {
        self.noise().validate(is_client)
    }

    /// The packet AEADs this side offers or accepts.
    pub fn aead(&self) -> AeadPreference {
        match self {
            SecurityConfig::PresharedKey(_) => AeadPreference::Auto,
            SecurityConfig::Noise(n) => n.aead,
        }
    }

    /// The same configuration offering (client) or accepting (server)
    /// these AEADs (a `PresharedKey` becomes the `Noise_NNpsk0` it stands
    /// for).
    pub fn with_aead(self, aead: AeadPreference) -> SecurityConfig {
        SecurityConfig::Noise(self.noise().with_aead(aead))
    }
}

impl std::fmt::Debug for SecurityConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecurityConfig::PresharedKey(_) => f.write_str("PresharedKey(<redacted>)"),
            SecurityConfig::Noise(n) => n.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_key_hex_round_trips_and_rejects_junk() {
        let kp = StaticKeypair::from_private([7; KEY_LEN]);
        let hex = kp.public().to_hex();
        assert_eq!(hex.len(), 64);
        assert_eq!(PublicKey::from_hex(&hex), Some(kp.public()));
        assert_eq!(PublicKey::from_hex(&hex.to_uppercase()), Some(kp.public()));
        assert_eq!(PublicKey::from_hex(&hex[..62]), None);
        assert_eq!(PublicKey::from_hex(&format!("{}zz", &hex[..62])), None);
        assert_eq!(PublicKey::from_hex("é".repeat(32).as_str()), None);
    }

    #[test]
    fn keypair_public_half_is_x25519_of_the_private_half() {
        // RFC 7748 §6.1, Alice's keys.
        let private =
            PublicKey::from_hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
                .unwrap()
                .0;
        let kp = StaticKeypair::from_private(private);
        assert_eq!(
            kp.public().to_hex(),
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
        );
        assert!(!format!("{kp:?}").contains("7707"));
    }

    #[test]
    fn validate_names_what_is_missing() {
        let kp = StaticKeypair::from_private([1; KEY_LEN]);
        assert!(NoiseConfig::ik(kp.clone(), kp.public())
            .validate(true)
            .is_ok());
        assert!(NoiseConfig::xx(kp.clone()).validate(true).is_ok());
        assert!(NoiseConfig::server(kp.clone()).validate(false).is_ok());
        assert!(NoiseConfig::server(kp.clone()).validate(true).is_err());
        assert!(NoiseConfig::nn_psk0([3; 32]).validate(true).is_ok());
        let mut no_key = NoiseConfig::ik(kp.clone(), kp.public());
        no_key.peer_key = None;
        assert!(no_key
            .validate(true)
            .unwrap_err()
            .contains("server's public key"));
        let mut no_psk = NoiseConfig::ik_psk2(kp.clone(), kp.public(), [3; 32]);
        no_psk.psk = None;
        assert!(no_psk.validate(true).unwrap_err().contains("pre-shared"));
        assert!(SecurityConfig::PresharedKey([9; 32])
            .validate(false)
            .is_ok());
        assert!(!format!("{:?}", SecurityConfig::PresharedKey([9; 32])).contains('9'));
    }
}
