//! `peregrine keygen`: a static X25519 keypair (`--out FILE` writes FILE,
//! private, mode 0600, and FILE.pub) or a fleet pre-shared key (`--psk`),
//! drawn from OS entropy. File formats: `peregrine::keys`.

use anyhow::{bail, Result};
use clap::Args;
use peregrine::keys;
use std::path::PathBuf;

/// Arguments of `peregrine keygen`.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Where to write the key. A keypair goes to FILE (private, mode 0600)
    /// and its public half to FILE.pub.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Write a 32-byte fleet pre-shared key (for `perf --psk`) instead.
    #[arg(long)]
    psk: bool,
    /// Replace existing files.
    #[arg(long)]
    force: bool,
}

/// Run `peregrine keygen`: the public key (or nothing, for a pre-shared
/// key) on stdout, what was written on stderr.
pub fn run(a: KeygenArgs) -> Result<()> {
    if a.psk {
        let psk = keys::generate_psk()?;
        keys::save_psk(&a.out, &psk, a.force)?;
        eprintln!(
            "wrote a pre-shared key to {} (mode 0600; copy it to every peer of the fleet over a secure channel)",
            a.out.display()
        );
        return Ok(());
    }
    let public_path = keys::public_key_path(&a.out);
    if !a.force {
        // Check both before writing either: no half-written pair.
        for p in [&a.out, &public_path] {
            if p.exists() {
                bail!(
                    "{} already exists; refusing to overwrite it (pass --force to replace it)",
                    p.display()
                );
            }
        }
    }
    let kp = keys::generate_keypair()?;
    keys::save_keypair(&a.out, &kp, a.force)?;
    keys::save_public_key(&public_path, &kp.public(), a.force)?;
    eprintln!(
        "wrote the keypair to {} (mode 0600) and its public key to {}",
        a.out.display(),
        public_path.display()
    );
    crate::out(&format!("{}\n", kp.public()))
}
