//! # Key files and OS entropy
//!
//! What the runtime and `peregrine keygen` need around the core's key
//! types (`peregrine_proto::crypto`): fresh keys from the operating
//! system's CSPRNG (`getrandom`), and small text files to keep them in.
//!
//! Formats (UTF-8 text; blank lines and lines starting with `#` are
//! ignored anywhere; `name = value` lines in any order, each once):
//!
//! * **keypair** (private, written with mode 0600):
//!   `peregrine-key v1`, then `private = <64 hex>` and `public = <64 hex>`
//!   (the public half is checked against the private one);
//! * **public key**: `peregrine-public-key v1`, then `public = <64 hex>`;
//! * **pre-shared key** (private, 0600): `peregrine-psk v1`, then
//!   `psk = <64 hex>`;
//! * **authorized keys** (a server's list of client keys): one key per
//!   line, 64 hex digits, optionally followed by white space and a name.
//!
//! Every loading error names the file, the line (when there is one) and
//! the problem, and never echoes a private value. Private files are
//! created with mode 0600 on Unix; [`permission_warning`] tells a caller
//! that a private file is readable by group or others (a warning, not an
//! error: the caller decides whether to print it).

use crate::Error;
use peregrine_proto::crypto::{PublicKey, StaticKeypair, KEY_LEN, PSK_LEN};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// First line of a keypair file.
pub const KEYPAIR_HEADER: &str = "peregrine-key v1";
/// First line of a public key file.
pub const PUBLIC_KEY_HEADER: &str = "peregrine-public-key v1";
/// First line of a pre-shared key file.
pub const PSK_HEADER: &str = "peregrine-psk v1";

/// A key file that cannot be read, parsed or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct KeyFileError {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line the problem is on, if it is on one.
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.path.display(), self.problem),
            None => write!(f, "{}: {}", self.path.display(), self.problem),
        }
    }
}

fn err(path: &Path, line: Option<usize>, problem: impl Into<String>) -> KeyFileError {
    KeyFileError {
        path: path.to_path_buf(),
        line,
        problem: problem.into(),
    }
}

/// `n` bytes from the operating system's CSPRNG.
pub(crate) fn os_random<const N: usize>() -> Result<[u8; N], Error> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| Error::Entropy(e.to_string()))?;
    Ok(b)
}

/// A fresh static X25519 keypair from OS entropy.
pub fn generate_keypair() -> Result<StaticKeypair, Error> {
    Ok(StaticKeypair::from_private(os_random::<KEY_LEN>()?))
}

/// A fresh 32-byte pre-shared key from OS entropy.
pub fn generate_psk() -> Result<[u8; PSK_LEN], Error> {
    os_random::<PSK_LEN>()
}

/// A fresh endpoint seed from OS entropy (connection ids, SYNC_NO and the
/// core's handshake randomness derive from it).
pub(crate) fn random_seed() -> Result<u64, Error> {
    Ok(u64::from_le_bytes(os_random::<8>()?))
}

/// The public key file written beside a keypair file: `FILE.pub`.
pub fn public_key_path(keypair_path: &Path) -> PathBuf {
    let mut s = keypair_path.as_os_str().to_os_string();
    s.push(".pub");
    PathBuf::from(s)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The text of a keypair file.
pub fn format_keypair(keypair: &StaticKeypair) -> String {
    format!(
        "{KEYPAIR_HEADER}\n# Peregrine static X25519 keypair. Keep this file secret.\nprivate = {}\npublic = {}\n",
        hex(keypair.private_bytes()),
        keypair.public()
    )
}

/// The text of a public key file.
pub fn format_public_key(key: &PublicKey) -> String {
    format!("{PUBLIC_KEY_HEADER}\npublic = {key}\n")
}

/// The text of a pre-shared key file.
pub fn format_psk(psk: &[u8; PSK_LEN]) -> String {
    format!(
        "{PSK_HEADER}\n# Peregrine fleet pre-shared key. Keep this file secret.\npsk = {}\n",
        hex(psk)
    )
}

/// What kind of file a header line announces (for a helpful error).
fn describe_header(line: &str) -> Option<&'static str> {
    match line {
        KEYPAIR_HEADER => Some("a keypair file"),
        PUBLIC_KEY_HEADER => Some("a public key file"),
        PSK_HEADER => Some("a pre-shared key file"),
        _ => None,
    }
}

/// Checks the header and collects `name = value` fields (value, line).
/// Values are never echoed in errors (they may be secret).
fn parse_fields<'a>(
    text: &'a str,
    path: &Path,
    header: &str,
    names: &[&'static str],
) -> Result<BTreeMap<&'static str, (&'a str, usize)>, KeyFileError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((n, first)) = lines.next() else {
        return Err(err(
            path,
            None,
            format!("is empty (expected `{header}` as the first line)"),
        ));
    };
    if first != header {
        let problem = match describe_header(first) {
            Some(kind) => format!("this is {kind} (`{first}`), expected `{header}`"),
            None => format!("the first line must be `{header}`"),
        };
        return Err(err(path, Some(n), problem));
    }
    let mut fields: BTreeMap<&'static str, (&str, usize)> = BTreeMap::new();
    for (n, line) in lines {
        let Some((name, value)) = line.split_once('=') else {
            return Err(err(path, Some(n), "expected `name = value`"));
        };
        let name = name.trim();
        let Some(&known) = names.iter().find(|k| **k == name) else {
            return Err(err(
                path,
                Some(n),
                format!(
                    "unknown field `{}` (expected {})",
                    name.chars().take(32).collect::<String>(),
                    names.join(", ")
                ),
            ));
        };
        if let Some((_, first)) = fields.get(known) {
            return Err(err(
                path,
                Some(n),
                format!("`{known}` given twice (first on line {first})"),
            ));
        }
        fields.insert(known, (value.trim(), n));
    }
    Ok(fields)
}

/// A 32-byte field: present and 64 hex digits.
fn key_field(
    fields: &BTreeMap<&str, (&str, usize)>,
    path: &Path,
    name: &str,
) -> Result<([u8; KEY_LEN], usize), KeyFileError> {
    let Some(&(value, line)) = fields.get(name) else {
        return Err(err(path, None, format!("has no `{name} = <64 hex>` line")));
    };
    match PublicKey::from_hex(value) {
        Some(k) => Ok((k.0, line)),
        None => Err(err(
            path,
            Some(line),
            format!(
                "`{name}` must be 64 hex digits (32 bytes), found {} characters",
                value.chars().count()
            ),
        )),
    }
}

/// Parses the text of a keypair file (`path` only names it in errors).
pub fn parse_keypair(text: &str, path: &Path) -> Result<StaticKeypair, KeyFileError> {
    let f = parse_fields(text, path, KEYPAIR_HEADER, &["private", "public"])?;
    let (private, _) = key_field(&f, path, "private")?;
    let (public, line) = key_field(&f, path, "public")?;
    let kp = StaticKeypair::from_private(private);
    if kp.public().0 != public {
        return Err(err(
            path,
            Some(line),
            "`public` is not the public half of `private` (file corrupted or edited?)",
        ));
    }
    Ok(kp)
}

/// Parses the text of a public key file.
pub fn parse_public_key(text: &str, path: &Path) -> Result<PublicKey, KeyFileError> {
    let f = parse_fields(text, path, PUBLIC_KEY_HEADER, &["public"])?;
    Ok(PublicKey(key_field(&f, path, "public")?.0))
}

/// Parses the text of a pre-shared key file.
pub fn parse_psk(text: &str, path: &Path) -> Result<[u8; PSK_LEN], KeyFileError> {
    let f = parse_fields(text, path, PSK_HEADER, &["psk"])?;
    Ok(key_field(&f, path, "psk")?.0)
}

/// Parses an authorized-keys list: one 64-hex key per line, optionally
/// followed by a name. An empty list is an error (it would refuse every
/// client).
pub fn parse_authorized_keys(text: &str, path: &Path) -> Result<Vec<PublicKey>, KeyFileError> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let word = line.split_whitespace().next().unwrap_or_default();
        match PublicKey::from_hex(word) {
            Some(k) => keys.push(k),
            None => {
                return Err(err(
                    path,
                    Some(i + 1),
                    "expected a public key (64 hex digits), optionally followed by a name",
                ))
            }
        }
    }
    if keys.is_empty() {
        return Err(err(path, None, "lists no public keys"));
    }
    Ok(keys)
}

fn read(path: &Path) -> Result<String, KeyFileError> {
    std::fs::read_to_string(path).map_err(|e| err(path, None, format!("cannot read: {e}")))
}

/// Loads a keypair file. See [`permission_warning`] for its mode.
pub fn load_keypair(path: &Path) -> Result<StaticKeypair, KeyFileError> {
    parse_keypair(&read(path)?, path)
}

/// Loads a public key file.
pub fn load_public_key(path: &Path) -> Result<PublicKey, KeyFileError> {
    parse_public_key(&read(path)?, path)
}

/// Loads a pre-shared key file.
pub fn load_psk(path: &Path) -> Result<[u8; PSK_LEN], KeyFileError> {
    parse_psk(&read(path)?, path)
}

/// Loads an authorized-keys list.
pub fn load_authorized_keys(path: &Path) -> Result<Vec<PublicKey>, KeyFileError> {
    parse_authorized_keys(&read(path)?, path)
}

/// Writes `text` to `path`; `private` files get mode 0600 (Unix). Without
/// `overwrite` an existing file is an error.
fn write(path: &Path, text: &str, private: bool, overwrite: bool) -> Result<(), KeyFileError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true);
    if overwrite {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        if private {
            o.mode(0o600);
        }
    }
    let mut f = o.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            err(path, None, "already exists; refusing to overwrite it")
        } else {
            err(path, None, format!("cannot create: {e}"))
        }
    })?;
    // An overwritten file keeps its old mode: tighten it.
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt as _;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| err(path, None, format!("cannot set mode 0600: {e}")))?;
    }
    let _ = private;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| err(path, None, format!("cannot write: {e}")))
}

/// Writes a keypair file (mode 0600).
pub fn save_keypair(
    path: &Path,
    keypair: &StaticKeypair,
    overwrite: bool,
) -> Result<(), KeyFileError> {
    write(path, &format_keypair(keypair), true, overwrite)
}

/// Writes a public key file.
pub fn save_public_key(path: &Path, key: &PublicKey, overwrite: bool) -> Result<(), KeyFileError> {
    write(path, &format_public_key(key), false, overwrite)
}

/// Writes a pre-shared key file (mode 0600).
pub fn save_psk(path: &Path, psk: &[u8; PSK_LEN], overwrite: bool) -> Result<(), KeyFileError> {
    write(path, &format_psk(psk), true, overwrite)
}

/// A warning if the private file at `path` is readable or writable by
/// group or others (Unix; `None` elsewhere or when the mode is fine).
pub fn permission_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Some(format!(
                "{}: private key file is accessible by group or others (mode {mode:04o}); run `chmod 600` on it",
                path.display()
            ));
        }
    }
    let _ = path;
    None
}

#[cfg(test)]
mod tests;
