//! `peregrine cc list|trace|plot` and the default showcase: the controller
//! lab of `peregrine_cc::lab` on its documented script.

use crate::{out, plot};
use anyhow::Context;
use clap::{Args, Subcommand};
use peregrine_cc::lab::{self, LabConfig, LabTrace};
use std::fmt::Write as _;
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
            let trace = run_lab(&name)?;
            let csv = trace.to_csv();
            match out {
                Some(path) => {
                    write_file(&path, csv.as_bytes())?;
                    eprintln!("wrote {} rows to {}", trace.rows.len(), path.display());
                }
                None => crate::out(&csv)?,
            }
            Ok(())
        }
        CcCommand::Plot { out, only } => {
            let names = select(&only)?;
            std::fs::create_dir_all(&out)
                .with_context(|| format!("cannot create {}", out.display()))?;
            for name in names {
                let trace = run_lab(name)?;
                let file = out.join(format!("{name}.svg"));
                plot::lab_trajectory(&trace, &LabConfig::default(), &file)?;
                crate::out(&format!("{}\n", file.display()))?;
            }
            Ok(())
        }
        CcCommand::Table => out(&comparison_table(&run_all()?)),
        CcCommand::Showcase => default_showcase(),
    }
}

fn select(only: &[String]) -> anyhow::Result<Vec<&'static str>> {
    if only.is_empty() {
        return Ok(peregrine_cc::NAMES.to_vec());
    }
    only.iter()
        .map(|n| {
            peregrine_cc::NAMES
                .iter()
                .copied()
                .find(|k| k == n)
                .ok_or_else(|| {
                    anyhow::Error::new(peregrine_cc::UnknownController { name: n.clone() })
                })
        })
        .collect()
}

/// Run the lab's default script with the named controller.
fn run_lab(name: &str) -> anyhow::Result<LabTrace> {
    let mut cc = peregrine_cc::build(name)?;
    Ok(lab::run(cc.as_mut(), &LabConfig::default()))
}

fn run_all() -> anyhow::Result<Vec<LabTrace>> {
    peregrine_cc::NAMES.iter().map(|n| run_lab(n)).collect()
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn kib(bytes: Option<u64>) -> String {
    bytes.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1024.0))
}

/// The showcase table, as Markdown (readable in a terminal and in a report).
fn comparison_table(traces: &[LabTrace]) -> String {
    let mut out = String::new();
    out.push_str("| controller | delivered MB | goodput Mbit/s | mean cwnd KiB | reductions | holds | cwnd before blockage KiB | cwnd 300 ms after KiB | kept |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let secs = LabConfig::default().duration.as_secs_f64();
    for t in traces {
        let s = &t.summary;
        let kept = s
            .blockage_retention()
            .map_or("-".into(), |r| format!("{:.0} %", r * 100.0));
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:.1} | {} | {} | {} | {} | {} |",
            s.controller,
            s.bytes_delivered as f64 / 1e6,
            s.bytes_delivered as f64 * 8.0 / secs / 1e6,
            s.mean_cwnd_bytes / 1024.0,
            s.reductions,
            s.holds,
            kib(s.cwnd_before_blockage_bytes),
            kib(s.cwnd_after_blockage_bytes),
            kept,
        );
    }
    out
}

/// `peregrine` with no arguments: every controller on the lab's script,
/// a table on standard output, and a report with CSVs and plots in `out/cc-lab/`.
pub fn default_showcase() -> anyhow::Result<()> {
    let cfg = LabConfig::default();
    let traces = run_all()?;
    let table = comparison_table(&traces);
    out(&format!(
        "Peregrine controller lab: {} controllers, one bulk flow over 10 Mbit/s, 40 ms base RTT,\n\
         1-BDP drop-tail queue; one loss at 10 s, a 150 ms blockage announced by a link hint at 20 s,\n\
         a forced RTO at 30 s; 40 s per run. (`peregrine cc --help` for trace and plot.)\n\n{table}",
        traces.len()
    ))?;
    let dir = PathBuf::from("out/cc-lab");
    std::fs::create_dir_all(dir.join("traces"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let mut report = String::new();
    report.push_str("# Peregrine controller lab\n\n");
    report.push_str("Generated by `peregrine cc showcase`. Every registered\n");
    report.push_str("congestion controller drives one bulk flow through the lab's ACK-clocked model: 10 Mbit/s\n");
    report.push_str(
        "bottleneck, 40 ms base RTT, drop-tail queue of one BDP (50 000 B), 1448-byte packets,\n",
    );
    report.push_str("RFC 6298 RTO with a 200 ms minimum. Script: slow start; the first packet sent at 10 s is\n");
    report.push_str("lost; at 20 s a link hint announces a 150 ms blockage and every packet sent during it is\n");
    report.push_str("lost; at 30 s the path is flushed and the retransmission timer fires; the run ends at 40 s.\n\n");
    report.push_str(
        "\"kept\" is cwnd 300 ms after the blockage ended over cwnd just before it started.\n\n",
    );
    report.push_str(&table);
    report.push_str("\n## Trajectories\n\n");
    for t in &traces {
        let name = &t.summary.controller;
        write_file(
            &dir.join("traces").join(format!("{name}.csv")),
            t.to_csv().as_bytes(),
        )?;
        plot::lab_trajectory(t, &cfg, &dir.join(format!("{name}.svg")))?;
        let _ = writeln!(
            report,
            "### {name}\n\n![{name}]({name}.svg)\n\nCSV: `traces/{name}.csv`\n"
        );
    }
    write_file(&dir.join("report.md"), report.as_bytes())?;
    out(&format!(
        "\nReport with plots and traces: {}\n",
        dir.join("report.md").display()
    ))?;
    Ok(())
}
