//! The key log: `PEREGRINE_KEYLOG=FILE` (or [`EndpointBuilder::keylog`])
//! appends every protected connection's packet keys to `FILE`, so that a
//! capture of it (`EndpointBuilder::pcap`, `peregrine perf … --pcap`,
//! tcpdump) can be decrypted — the `SSLKEYLOGFILE` of SLTP.
//!
//! **A debugging aid, off by default: anyone who has the file reads the
//! traffic of every connection in it.** The file is opened append-only
//! and, when created, with mode 0600 (an existing file keeps its mode);
//! the endpoint logs a `warn` when it turns the key log on.
//!
//! The line format is `peregrine_proto::crypto::keylog`'s (four lines per
//! connection: `SLTP_{CLIENT,SERVER}_TRAFFIC_{KEY,IV} <client ephemeral>
//! <hex>`; docs/observability.md). Each connection's four lines go out in
//! one `write` on an `O_APPEND` file, so a client and a server (or several
//! processes) sharing one file never interleave within a connection.
//!
//! Cost: with the key log off, nothing (the core keeps no key copy; the
//! driver checks one `Option` per `Connected` event). On, the driver
//! asks the core for the keys of each newly connected connection until
//! they exist (O(connections awaiting keys) per driver turn — a server's
//! `Noise_IK` keys exist once its START-REPLY is written, usually the same
//! turn).

use crate::EndpointBuilder;
use peregrine_proto::endpoint::{ConnectionHandle, Endpoint as ProtoEndpoint};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The environment variable naming the key log file.
pub const KEYLOG_ENV: &str = "PEREGRINE_KEYLOG";

impl EndpointBuilder {
    /// Append the packet keys of every protected connection of the
    /// endpoint to `path` (opened at [`bind`](Self::bind); an error there
    /// is `bind`'s). Without this, `bind` reads the path from the
    /// environment variable `PEREGRINE_KEYLOG` (unset or empty: no key
    /// log). A debugging aid: whoever has the file reads the traffic. See
    /// [`crate::keylog`] for the format and the file's mode.
    pub fn keylog(mut self, path: impl Into<PathBuf>) -> EndpointBuilder {
        self.observe.keylog = Some(path.into());
        self
    }
}

/// The key log path of a builder: its own, else `PEREGRINE_KEYLOG`.
pub(crate) fn resolve(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(KEYLOG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// One endpoint's open key log.
#[derive(Debug)]
pub(crate) struct KeyLog {
    file: File,
    path: PathBuf,
    /// Connections announced `Connected` whose keys the core has not
    /// derived yet (or not yet handed over).
    pending: Vec<ConnectionHandle>,
    /// A write failed: the key log stops (the connections go on).
    failed: bool,
}

impl KeyLog {
    /// Opens `path` for appending (created 0600 where the OS has modes).
    pub(crate) fn open(path: &Path) -> io::Result<KeyLog> {
        let mut o = OpenOptions::new();
        o.append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let file = o.open(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("key log file {} ({KEYLOG_ENV}): {e}", path.display()),
            )
        })?;
        tracing::warn!(
            file = %path.display(),
            "key log on: packet keys are appended to the file; anyone who has it can read the traffic"
        );
        Ok(KeyLog {
            file,
            path: path.to_path_buf(),
            pending: Vec::new(),
            failed: false,
        })
    }

    /// A connection reached `Connected`: log its keys once they exist.
    /// O(1).
    pub(crate) fn watch(&mut self, handle: ConnectionHandle) {
        if !self.failed {
            self.pending.push(handle);
        }
    }

    /// Writes the keys of the watched connections that have them; forgets
    /// those that are unprotected or gone. O(watched).
    pub(crate) fn drain(&mut self, proto: &mut ProtoEndpoint) {
        if self.failed {
            self.pending.clear();
        }
        // Key updates (and generation 0 where the core noted it first).
        while let Some(m) = proto.take_updated_keys() {
            self.write(&m.key_log_lines());
        }
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.retain(|&h| {
            if let Some(m) = proto.take_packet_keys(h) {
                self.write(&m.key_log_lines());
                return false;
            }
            // Keys still to come: a protected connection that is open
            // and has none yet (once it has, `take_updated_keys` wrote
            // them).
            proto.security_pattern(h).is_some()
                && proto.security_aead(h).is_none()
                && proto
                    .state(h)
                    .is_some_and(|s| s != peregrine_proto::ConnectionState::Closed)
        });
        self.pending = pending;
    }

    fn write(&mut self, lines: &str) {
        if self.failed {
            return;
        }
        if let Err(e) = self.file.write_all(lines.as_bytes()) {
            tracing::warn!(file = %self.path.display(), error = %e, "key log failed: logging keys stops");
            self.failed = true;
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_created_0600_and_appended_to() {
        let dir =
            std::env::temp_dir().join(format!("peregrine-keylog-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.log");
        let mut log = KeyLog::open(&path).unwrap();
        log.write("a\n");
        drop(log);
        let mut log = KeyLog::open(&path).unwrap();
        log.write("b\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let e = KeyLog::open(&dir.join("no/such/dir/keys.log")).unwrap_err();
        assert!(e.to_string().contains("key log file"), "{e}");
        assert!(e.to_string().contains(KEYLOG_ENV), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_explicit_path_wins_over_the_environment() {
        let p = PathBuf::from("/tmp/explicit.log");
        assert_eq!(resolve(Some(&p)), Some(p));
    }
}
