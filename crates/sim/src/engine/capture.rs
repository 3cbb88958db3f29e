//! `peregrine sim … --pcap DIR`: one pcapng capture per link direction.
//!
//! Every datagram is recorded when it is offered to a link direction —
//! as `tcpdump` on the sending interface would see it, so packets the
//! link then drops (queue overflow, loss, outage) are in the capture too
//! and a gap at the receiver's side is visible as such. Timestamps are
//! the simulated instant in nanoseconds since the run's start; each
//! datagram is wrapped in IPv4/UDP headers carrying the simulated nodes'
//! addresses (`10.x.y.z`, the node's index) and the endpoints' ports, so
//! Wireshark, tshark and `tools/wireshark/sltp.lua` read it as they read
//! a real capture. A capture costs nothing when `--pcap` is not given
//! (the engine holds `None`).

use super::addr;
use crate::world::packet::Packet;
use peregrine_cc::Time;
use peregrine_trace::pcapng::{Ipv4Udp, LinkType, PcapngWriter};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufWriter;
use std::net::{SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};

/// The open captures of one run.
pub(crate) struct LinkCapture {
    writers: Vec<PcapngWriter<BufWriter<File>>>,
    paths: Vec<PathBuf>,
    frame: Ipv4Udp,
    /// The first write error; the run reports it at its end.
    error: Option<String>,
}

/// A link direction's name (`<link>/<up|down>`, `wifi/<node>`) as a file
/// name: `/` becomes `.`, anything but ASCII letters, digits, `.`, `-`
/// and `_` becomes `_`.
pub(crate) fn file_name(link_name: &str) -> String {
    let mut s = peregrine_trace::file_name_part(&link_name.replace('/', "."));
    s.push_str(".pcapng");
    s
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        // `addr` only makes IPv4 addresses.
        SocketAddr::V6(_) => SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, a.port()),
    }
}

impl LinkCapture {
    /// Creates `dir` and one capture file per link direction.
    ///
    /// Errors name the file that could not be made, or two link names
    /// that map to the same file.
    pub(crate) fn create(dir: &Path, link_names: &[String]) -> Result<LinkCapture, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--pcap: cannot create {}: {e}", dir.display()))?;
        let mut seen = BTreeSet::new();
        let mut writers = Vec::with_capacity(link_names.len());
        let mut paths = Vec::with_capacity(link_names.len());
        for name in link_names {
            let file = file_name(name);
            if !seen.insert(file.clone()) {
                return Err(format!(
                    "--pcap: two link directions would both be captured in {file}; rename a link"
                ));
            }
            let path = dir.join(&file);
            let f = File::create(&path)
                .map_err(|e| format!("--pcap: cannot create {}: {e}", path.display()))?;
            // One interface per file: its id is 0.
            let w = PcapngWriter::new(BufWriter::new(f), "peregrine sim")
                .and_then(|mut w| w.add_interface(name, LinkType::Ipv4).map(|_| w))
                .map_err(|e| format!("--pcap: cannot write {}: {e}", path.display()))?;
            writers.push(w);
            paths.push(path);
        }
        Ok(LinkCapture {
            writers,
            paths,
            frame: Ipv4Udp::default(),
            error: None,
        })
    }

    /// Records `pkt` offered to link direction `link` at `now`. O(packet).
    pub(crate) fn record(&mut self, link: usize, now: Time, pkt: &Packet) {
        if self.error.is_some() {
            return;
        }
        let bytes = self.frame.wrap(
            v4(addr(pkt.src, pkt.src_port)),
            v4(addr(pkt.dst, pkt.dst_port)),
            &pkt.payload,
        );
        if let Err(e) = self.writers[link].write_packet(0, now.as_nanos(), bytes) {
            self.error = Some(format!(
                "--pcap: cannot write {}: {e}",
                self.paths[link].display()
            ));
        }
    }

    /// Flushes every capture; returns the files written.
    pub(crate) fn finish(self) -> Result<Vec<PathBuf>, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        for (w, p) in self.writers.into_iter().zip(&self.paths) {
            w.finish()
                .map_err(|e| format!("--pcap: cannot write {}: {e}", p.display()))?;
        }
        Ok(self.paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_names_become_file_names() {
        assert_eq!(file_name("bottleneck/up"), "bottleneck.up.pcapng");
        assert_eq!(file_name("wifi/uav 3"), "wifi.uav_3.pcapng");
    }

    #[test]
    fn colliding_names_are_refused_with_a_reason() {
        let dir = std::env::temp_dir().join(format!("peregrine-cap-{}", std::process::id()));
        let err = LinkCapture::create(&dir, &["a b/up".into(), "a_b/up".into()])
            .err()
            .unwrap();
        assert!(err.contains("a_b.up.pcapng"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
