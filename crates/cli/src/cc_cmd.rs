//! `peregrine cc list|trace|plot|table|showcase`: the controller lab
//! (`peregrine_lab::cclab`) on its documented script.

use crate::out;
use clap::{Args, Subcommand};
use peregrine_lab::cclab;
use std::path::{Path, PathBuf};

/// Arguments of `peregrine cc`.
#[derive(Args, Debug)]
pub struct CcArgs {
    #[command(subcommand)]
    command: CcCommand,
}

#[derive(Subcommand, Debug)]
enum CcCommand {
    /// Print the registered controller names, one per line.
    List,
    /// Drive one controller through the lab's scripted path and write its
    /// trajectory as CSV (time_s,cwnd_bytes,ssthresh_bytes,pacing_rate_bps,event).
    Trace {
        /// Controller name (see `peregrine cc list`).
        name: String,
        /// Write the CSV here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write one SVG plot of the lab trajectory per controller.
    Plot {
        /// Directory for the SVGs (created if missing).
        #[arg(long, default_value = "out/cc-plots")]
        out: PathBuf,
        /// Plot only these controllers (default: all).
        #[arg(long = "only", value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Print the comparison table of every controller on the lab's script.
    Table,
    /// The controller lab showcase: the table, plus a report with every
    /// trajectory in out/cc-lab/.
    Showcase,
}

/// Run `peregrine cc`.
pub fn run(args: CcArgs) -> anyhow::Result<()> {
    match args.command {
        CcCommand::List => {
            let mut list = peregrine_cc::NAMES.join("\n");
            list.push('\n');
            out(&list)
        }
        CcCommand::Trace { name, out } => {
            let trace = cclab::run_one(&name)?;
            let csv = trace.to_csv();
            match out {
                Some(path) => {
                    cclab::write_bytes(&path, csv.as_bytes())?;
                    eprintln!("wrote {} rows to {}", trace.rows.len(), path.display());
                }
                None => crate::out(&csv)?,
            }
            Ok(())
        }
        CcCommand::Plot { out, only } => {
            let names = cclab::select(&only)?;
            for file in cclab::plot_all(&names, &out)? {
                crate::out(&format!("{}\n", file.display()))?;
            }
            Ok(())
        }
        CcCommand::Table => out(&cclab::comparison_table(&cclab::run_all()?)),
        CcCommand::Showcase => showcase(),
    }
}

/// `peregrine cc showcase`: the table on standard output, the report in
/// `out/cc-lab/`.
fn showcase() -> anyhow::Result<()> {
    let s = cclab::showcase(Path::new("out/cc-lab"))?;
    out(&format!(
        "Peregrine controller lab: {} controllers, one bulk flow over 10 Mbit/s, 40 ms base RTT,\n\
         1-BDP drop-tail queue; one loss at 10 s, a 150 ms blockage announced by a link hint at 20 s,\n\
         a forced RTO at 30 s; 40 s per run. (`peregrine cc --help` for trace and plot.)\n\n{}",
        s.traces.len(),
        s.table
    ))?;
    out(&format!(
        "\nReport with plots and traces: {}\n",
        s.report.display()
    ))
}
