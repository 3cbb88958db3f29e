//! # peregrine-trace — captures that the usual tools open
//!
//! When a transfer misbehaves, engineers open a packet capture in
//! Wireshark or tshark. This crate writes what those tools read, for the
//! simulator (`peregrine sim … --pcap DIR`: one capture per link
//! direction, simulated timestamps) and the runtime alike:
//!
//! * [`pcapng`] — a streaming pcapng writer (section header, one
//!   interface description per capture, enhanced packet blocks with
//!   nanosecond timestamps) and [`pcapng::Ipv4Udp`], which wraps a UDP
//!   payload in the IPv4 and UDP headers a dissector expects (link type
//!   `LINKTYPE_IPV4`), so an SLTP datagram shows up as UDP between the
//!   simulated nodes' addresses. `tools/wireshark/sltp.lua` decodes the
//!   SLTP inside.
//! * [`qlog`] — a `TraceSink` for the core's trace stream
//!   (`peregrine_proto::trace`) writing qlog JSON-SEQ (`.sqlog`, one file
//!   per connection endpoint) with QUIC's event names where the meaning
//!   is the same, so qvis draws it; [`qlog::QlogDir`] is the factory.
//!
//! Nothing here reads a clock or allocates per packet: the caller gives
//! each packet's time, and the header buffer is reused.

#![warn(missing_docs)]

pub mod pcapng;
pub mod qlog;

/// `name` as part of a file name: ASCII letters, digits, `.`, `-` and `_`
/// kept, anything else `_` (link names, flow names). O(name).
pub fn file_name_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
