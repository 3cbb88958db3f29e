//! Shared by the emulator tests: whether this machine can run `peregrine
//! emu` (TUN, iproute2, network namespaces), and if not, why.

use std::process::Command;

/// Why the emulator cannot run here, if it cannot.
pub fn environment_problem() -> Option<String> {
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing (no TUN driver)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        _ => return Some("iproute2 (`ip`) is not installed".into()),
    }
    match Command::new("unshare").args(["-n", "true"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "cannot create a network namespace (`unshare -n`: {}); run as root",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("`unshare` (util-linux) cannot run: {e}")),
    }
}
