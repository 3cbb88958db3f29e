//! Writing one datagram into the caller's buffer.

use crate::wire::{DatagramRepr, HeaderRepr, Payload};

/// Encode `header` + `payload` (no tag) into `buf`, replacing its contents.
/// `None` only if the wire encoder refuses the values, which the connection
/// never builds; the buffer is then left empty.
pub(crate) fn write(buf: &mut Vec<u8>, header: HeaderRepr, payload: Payload<'_>) -> Option<usize> {
    let dg = DatagramRepr {
        header,
        payload,
        auth_tag: &[],
    };
    let len = dg.buffer_len();
    buf.clear();
    buf.resize(len, 0);
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
