//! `peregrine qlog plot FILE [--out DIR]`: the congestion view of a qlog
//! file (`peregrine_lab::qlog_plot`).

use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Arguments of `peregrine qlog`.
#[derive(Args, Debug)]
pub struct QlogArgs {
    #[command(subcommand)]
    command: QlogCommand,
}

#[derive(Subcommand, Debug)]
enum QlogCommand {
    /// Draw congestion window, bytes in flight and RTT over time (SVG), as
    /// qvis's congestion view does, from a `.sqlog` file of `--qlog`.
    Plot {
        /// The qlog file (JSON-SEQ, as `peregrine sim --qlog` writes).
        file: PathBuf,
        /// Where to write the SVGs (default: beside the file).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// Run `peregrine qlog …`.
pub fn run(args: QlogArgs) -> Result<()> {
    match args.command {
        QlogCommand::Plot { file, out } => {
            let view = peregrine_lab::qlog_plot::read(&file)?;
            let dir = out.unwrap_or_else(|| {
                file.parent()
                    .map_or_else(|| PathBuf::from("."), PathBuf::from)
            });
            let stem = file
                .file_stem()
                .map_or_else(|| "qlog".into(), |s| s.to_string_lossy().into_owned());
            for f in peregrine_lab::qlog_plot::plot(&view, &dir, &stem)? {
                crate::out(&format!("wrote {}\n", f.display()))?;
            }
            Ok(())
        }
    }
}
