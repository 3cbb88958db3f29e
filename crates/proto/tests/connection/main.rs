//! The connection's tests over the in-memory harness
//! ([`peregrine_proto::harness::driver`]): life cycle, messaging,
//! recovery, flow control, the handover window, migration, packet
//! protection and the Noise handshakes, end to end between endpoints.
//! They use the public API only, so they see one copy of the crate's
//! types (they were unit tests in `src/connection/` until issue 19).

mod aead;
mod basic;
mod data;
mod e2e;
mod flow;
mod group_refusal;
mod noise;
mod path;
mod security;
mod window;

use peregrine_proto::wire::{DatagramRepr, HeaderRepr, Payload};

/// Encodes `header` + `payload` (no tag) into `buf`, replacing its
/// contents, as the connection writes a plain datagram; `None` if the
/// encoder refuses the values. The tests forge datagrams with it.
pub fn write(buf: &mut Vec<u8>, header: HeaderRepr, payload: Payload<'_>) -> Option<usize> {
    let dg = DatagramRepr {
        header,
        payload,
        auth_tag: &[],
    };
    buf.clear();
    buf.resize(dg.buffer_len(), 0);
    match dg.emit(buf) {
        Ok(n) => {
            buf.truncate(n);
            Some(n)
        }
        Err(_) => {
            buf.clear();
            None
        }
    }
}
