//! `RUST_LOG`: the runtime's and the simulator's `tracing` events
//! (connection life cycle, socket errors, dropped events) on stderr.
//! Silent by default: without `RUST_LOG` no subscriber is installed.

use tracing_subscriber::EnvFilter;

/// Install a stderr subscriber filtered by `RUST_LOG` (e.g.
/// `RUST_LOG=peregrine=debug`), if it is set. A value that does not parse
/// is reported on stderr, naming the variable, and logging stays off.
pub fn init() {
    let Some(value) = std::env::var_os("RUST_LOG") else {
        return;
    };
    match EnvFilter::try_from_default_env() {
        Ok(filter) => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr)
                .try_init();
        }
        Err(e) => eprintln!("warning: RUST_LOG={value:?} ignored: {e}"),
    }
}
