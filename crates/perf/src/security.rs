//! `perf`'s security options: `--insecure`, `--key`, `--peer-key`,
//! `--psk`, `--authorized-keys`, turned into the endpoint's security
//! configuration and a one-line description of the mode for the report.
//!
//! Client: nothing → `Noise_XX` with a fresh keypair (encrypted, the
//! server not authenticated: opportunistic); `--peer-key` → `Noise_IK`
//! (server pinned); `--psk` → `Noise_NNpsk0`, `--psk` + `--peer-key` →
//! `Noise_IKpsk2`; `--key` sets the client's own keypair. Server: nothing
//! → a fresh keypair accepting `Noise_IK` and `Noise_XX`; `--key` sets the
//! keypair; `--psk` → accepts only the pre-shared-key patterns (IKpsk2 too
//! with `--key`); `--authorized-keys` accepts only the listed client keys.
//! `--aead` (both sides) restricts the packet AEAD: `auto` (default: both,
//! AES-128-GCM first where the CPU accelerates AES), `aes-128-gcm` or
//! `chacha20-poly1305`.

use anyhow::{bail, Result};
use clap::Args;
use peregrine::keys;
use peregrine::{
    AeadPreference, EndpointBuilder, NoiseConfig, PublicKey, SecurityConfig, StaticKeypair,
};
use std::path::{Path, PathBuf};

/// Options both sides take.
#[derive(Args, Debug, Clone, Default)]
pub struct SecurityArgs {
    /// Turn encryption off: SLTP's plain wire format (seed reproductions).
    #[arg(long)]
    insecure: bool,
    /// This side's static keypair file (`peregrine keygen --out FILE`);
    /// default: a fresh one per run.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// The fleet's pre-shared key file (`peregrine keygen --psk --out FILE`).
    #[arg(long, value_name = "FILE")]
    psk: Option<PathBuf>,
    /// Packet AEAD: auto (AES-128-GCM first where the CPU accelerates AES,
    /// else ChaCha20-Poly1305), aes-128-gcm or chacha20-poly1305 (only).
    #[arg(long, value_name = "AEAD", value_parser = parse_aead)]
    aead: Option<AeadPreference>,
}

fn parse_aead(s: &str) -> Result<AeadPreference, String> {
    AeadPreference::from_name(s)
        .ok_or_else(|| format!("unknown AEAD `{s}` (auto, aes-128-gcm, chacha20-poly1305)"))
}

/// What the endpoint runs, and how the report names it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `None`: insecure.
    config: Option<SecurityConfig>,
    /// E.g. `Noise_XX (opportunistic: server not authenticated)`.
    pub description: String,
    /// The Noise pattern (client) or patterns (server), or `insecure`.
    pub(super) mode: String,
    /// Whether the peer is authenticated by a key this side was given.
    pub(super) peer_authenticated: bool,
    /// The packet AEADs offered / accepted (`None`: insecure).
    pub(super) aead: Option<AeadPreference>,
}

impl Plan {
    /// Apply to an endpoint builder.
    pub fn apply(&self, b: EndpointBuilder) -> EndpointBuilder {
        match (&self.config, self.aead) {
            (Some(c), Some(a)) => b.security(c.clone()).aead(a),
            (Some(c), None) => b.security(c.clone()),
            (None, _) => b.insecure(),
        }
    }
}

fn keypair(path: &Path) -> Result<StaticKeypair> {
    let kp = keys::load_keypair(path)?;
    if let Some(w) = keys::permission_warning(path) {
        eprintln!("warning: {w}");
    }
    Ok(kp)
}

fn psk(path: &Path) -> Result<[u8; 32]> {
    let k = keys::load_psk(path)?;
    if let Some(w) = keys::permission_warning(path) {
        eprintln!("warning: {w}");
    }
    Ok(k)
}

/// `--peer-key`: 64 hex digits, or a public key file.
fn peer_key(arg: &str) -> Result<PublicKey> {
    if let Some(k) = PublicKey::from_hex(arg) {
        return Ok(k);
    }
    Ok(keys::load_public_key(Path::new(arg))?)
}

fn own_keypair(a: &SecurityArgs) -> Result<StaticKeypair> {
    match &a.key {
        Some(p) => keypair(p),
        None => Ok(keys::generate_keypair()?),
    }
}

fn insecure_plan() -> Plan {
    Plan {
        config: None,
        description: "insecure (no encryption, no authentication)".into(),
        mode: "insecure".into(),
        peer_authenticated: false,
        aead: None,
    }
}

/// The server's plan.
pub fn server_plan(a: &SecurityArgs, authorized: Option<&Path>) -> Result<Plan> {
    if a.insecure {
        if a.key.is_some() || a.psk.is_some() || authorized.is_some() || a.aead.is_some() {
            bail!("--insecure cannot be combined with --key, --psk, --aead or --authorized-keys");
        }
        return Ok(insecure_plan());
    }
    let authorized = authorized.map(keys::load_authorized_keys).transpose()?;
    let (mut cfg, mode) = match &a.psk {
        Some(p) => {
            let kp = a.key.as_deref().map(keypair).transpose()?;
            if authorized.is_some() && kp.is_none() {
                bail!("--authorized-keys with --psk needs --key (Noise_NNpsk0 carries no client key to check)");
            }
            let mode = if kp.is_some() {
                "Noise_IKpsk2+Noise_NNpsk0"
            } else {
                "Noise_NNpsk0"
            };
            (NoiseConfig::server_psk(kp, psk(p)?), mode)
        }
        None => (NoiseConfig::server(own_keypair(a)?), "Noise_IK+Noise_XX"),
    };
    let n_auth = authorized.as_ref().map(Vec::len);
    if let Some(keys) = authorized {
        cfg = cfg.authorize(keys);
    }
    let mut description = mode.to_string();
    if a.psk.is_some() {
        description += ", pre-shared key";
    }
    if let Some(k) = cfg.keypair.as_ref().map(StaticKeypair::public) {
        description += &format!(", public key {k}");
    }
    match n_auth {
        Some(n) => description += &format!(", {n} authorized client keys"),
        None => description += ", any client key",
    }
    let config = as_security(cfg);
    Ok(Plan {
        config: Some(config),
        description,
        mode: mode.into(),
        peer_authenticated: n_auth.is_some(),
        aead: Some(a.aead.unwrap_or_default()),
    })
}

/// A pre-shared key alone is the `PresharedKey` shorthand (= NNpsk0);
/// anything else runs as the Noise configuration it is.
fn as_security(cfg: NoiseConfig) -> SecurityConfig {
    match (&cfg.keypair, &cfg.psk) {
        (None, Some(k)) => SecurityConfig::PresharedKey(*k),
        _ => SecurityConfig::Noise(cfg),
    }
}

/// The client's plan.
pub fn client_plan(a: &SecurityArgs, server_key: Option<&str>) -> Result<Plan> {
    if a.insecure {
        if a.key.is_some() || a.psk.is_some() || server_key.is_some() || a.aead.is_some() {
            bail!("--insecure cannot be combined with --key, --psk, --aead or --peer-key");
        }
        return Ok(insecure_plan());
    }
    let server_key = server_key.map(peer_key).transpose()?;
    let (cfg, mode, description) = match (&a.psk, server_key) {
        (Some(p), Some(k)) => (
            NoiseConfig::ik_psk2(own_keypair(a)?, k, psk(p)?),
            "Noise_IKpsk2",
            format!("Noise_IKpsk2 (pre-shared key, server key {k} pinned)"),
        ),
        (Some(p), None) => {
            if a.key.is_some() {
                bail!("--key with --psk needs --peer-key (Noise_IKpsk2); a pre-shared key alone runs Noise_NNpsk0, which has no static keys");
            }
            (
                NoiseConfig::nn_psk0(psk(p)?),
                "Noise_NNpsk0",
                "Noise_NNpsk0 (pre-shared key: peers authenticated as fleet members)".into(),
            )
        }
        (None, Some(k)) => (
            NoiseConfig::ik(own_keypair(a)?, k),
            "Noise_IK",
            format!("Noise_IK (server key {k} pinned)"),
        ),
        (None, None) => (
            NoiseConfig::xx(own_keypair(a)?),
            "Noise_XX",
            "Noise_XX (opportunistic: encrypted, server not authenticated; pin it with --peer-key)"
                .into(),
        ),
    };
    let config = as_security(cfg);
    Ok(Plan {
        config: Some(config),
        description,
        mode: mode.into(),
        peer_authenticated: mode != "Noise_XX",
        aead: Some(a.aead.unwrap_or_default()),
    })
}
