//! Packet protection of a simulated flow (`security` in a scenario's
//! `[[flows]]`): the client's and the server's `SecurityConfig` for a Noise
//! pattern, with every key drawn from the scenario seed so an encrypted run
//! reproduces bit for bit like an unencrypted one.
//!
//! The keys are simulation keys — derived from a seed printed in every
//! summary — and protect nothing; they exist so experiments can measure
//! what encryption costs (16-byte tags, the handshake's bytes and round
//! trips) with the same protocol code the UDP runtime runs.
//!
//! The packet AEAD is pinned to ChaCha20-Poly1305 on both sides: what the
//! handshake offers never depends on the machine running the simulation
//! (the AEAD TLV's bytes are the same everywhere). Either AEAD would give
//! the same results anyway — both have a 16-byte tag, so every datagram
//! has the same length — but pinning makes that true by construction.

use crate::rng::component_rng;
use peregrine_proto::crypto::{
    AeadPreference, NoiseConfig, NoisePattern, SecurityConfig, StaticKeypair,
};
use rand::RngExt;

/// 32 bytes of the component stream `name` of `seed`.
fn key_bytes(seed: u64, name: &str) -> [u8; 32] {
    let mut rng = component_rng(seed, name);
    let mut k = [0u8; 32];
    for b in k.iter_mut() {
        *b = rng.random::<u8>();
    }
    k
}

/// `(client, server)` security configurations of flow `flow` running
/// `pattern`: the flow's own client and server keys (`keys/N/…`).
pub(crate) fn flow_security(
    seed: u64,
    flow: usize,
    pattern: NoisePattern,
) -> (SecurityConfig, SecurityConfig) {
    noise_pair(seed, flow, &format!("keys/{flow}"), pattern)
}

/// `(client, server)` Noise configurations running `pattern`: the client
/// key of flow `flow` (`keys/N/client`), the server's static key and PSK
/// from `server_keys` (`<server_keys>/server`, `<server_keys>/psk`) —
/// the flow's own for a point-to-point flow, the shared endpoint's for a
/// flow group. O(1).
pub(crate) fn noise_pair(
    seed: u64,
    flow: usize,
    server_keys: &str,
    pattern: NoisePattern,
) -> (SecurityConfig, SecurityConfig) {
    let client_kp = StaticKeypair::from_private(key_bytes(seed, &format!("keys/{flow}/client")));
    let server_kp = StaticKeypair::from_private(key_bytes(seed, &format!("{server_keys}/server")));
    let psk = key_bytes(seed, &format!("{server_keys}/psk"));
    let server_pub = server_kp.public();
    let (client, server) = match pattern {
        NoisePattern::IK => (
            NoiseConfig::ik(client_kp, server_pub),
            NoiseConfig::server(server_kp),
        ),
        NoisePattern::XX => (NoiseConfig::xx(client_kp), NoiseConfig::server(server_kp)),
        NoisePattern::IKpsk2 => (
            NoiseConfig::ik_psk2(client_kp, server_pub, psk),
            NoiseConfig::server_psk(Some(server_kp), psk),
        ),
        NoisePattern::NNpsk0 => (
            NoiseConfig::nn_psk0(psk),
            NoiseConfig::server_psk(None, psk),
        ),
    };
    let aead = AeadPreference::ChaCha20Poly1305;
    (
        SecurityConfig::Noise(client.with_aead(aead)),
        SecurityConfig::Noise(server.with_aead(aead)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_the_seed_and_every_role_validates() {
        for p in NoisePattern::ALL {
            let (c, s) = flow_security(7, 0, p);
            assert_eq!(c.validate(true), Ok(()), "{p:?} client");
            assert_eq!(s.validate(false), Ok(()), "{p:?} server");
            // The AEAD never depends on the CPU: pinned on both sides.
            assert_eq!(c.aead(), AeadPreference::ChaCha20Poly1305);
            assert_eq!(s.aead(), AeadPreference::ChaCha20Poly1305);
            assert_eq!(flow_security(7, 0, p), (c.clone(), s));
            assert_ne!(
                flow_security(8, 0, p).0,
                c,
                "{p:?}: another seed, other keys"
            );
            assert_ne!(
                flow_security(7, 1, p).0,
                c,
                "{p:?}: another flow, other keys"
            );
        }
    }
}
