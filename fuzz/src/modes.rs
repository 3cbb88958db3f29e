//! # The security modes the `endpoint` target runs in
//!
//! The first input byte picks one (modulo the table's length). Each mode is
//! one entry: a name (used in seed file names) and the client's and the
//! server's `ConnectionConfig::security`. A Noise mode is added by one more
//! entry, e.g. `Mode { name: "ik", security: || (Some(client_ik), Some(server)) }`
//! (new entries go at the end, so the committed seeds keep their mode).

use peregrine_proto::crypto::{NoiseConfig, SecurityConfig, StaticKeypair};

/// The fleet secret of the pre-shared-key mode.
pub const PSK: [u8; 32] = [0x5a; 32];

/// The client's static keypair of the Noise modes.
fn client_key() -> StaticKeypair {
    StaticKeypair::from_private([0xc1; 32])
}

/// The server's static keypair of the Noise modes.
fn server_key() -> StaticKeypair {
    StaticKeypair::from_private([0x5e; 32])
}

/// One security mode: a name and the (client, server) configurations.
pub struct Mode {
    /// Used in seed file names and reports.
    pub name: &'static str,
    /// `ConnectionConfig::security` of the client and of the server.
    pub security: fn() -> (Option<SecurityConfig>, Option<SecurityConfig>),
}

/// The modes an input can pick (its first byte, modulo the length).
/// Adding a mode is one line.
pub const MODES: &[Mode] = &[
    Mode {
        name: "insecure",
        security: || (None, None),
    },
    Mode {
        name: "psk",
        security: || {
            let s = Some(SecurityConfig::PresharedKey(PSK));
            (s.clone(), s)
        },
    },
    Mode {
        name: "ik",
        security: || {
            let c = NoiseConfig::ik(client_key(), server_key().public());
            let s = NoiseConfig::server(server_key());
            (Some(SecurityConfig::Noise(c)), Some(SecurityConfig::Noise(s)))
        },
    },
    Mode {
        name: "xx",
        security: || {
            let c = NoiseConfig::xx(client_key());
            let s = NoiseConfig::server(server_key()).authorize(vec![client_key().public()]);
            (Some(SecurityConfig::Noise(c)), Some(SecurityConfig::Noise(s)))
        },
    },
    Mode {
        name: "ikpsk2",
        security: || {
            let c = NoiseConfig::ik_psk2(client_key(), server_key().public(), PSK);
            let s = NoiseConfig::server_psk(Some(server_key()), PSK);
            (Some(SecurityConfig::Noise(c)), Some(SecurityConfig::Noise(s)))
        },
    },
];
