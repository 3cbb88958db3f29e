//! Where `peregrine sim --sweep` runs: `--backend local|ray`,
//! `--ray-address ADDR`, `--python PY`, `--ray-cpus N` and `--resume`
//! (the work is `peregrine_lab::sweep_backend`; this file parses and
//! prints).

use crate::progress::Bar;
use anyhow::Result;
use clap::Args;
use peregrine_lab::sweep::{summary_table, SweepOptions};
use peregrine_lab::sweep_backend::{
    catch_interrupt, resolve_backend, run_sweep_backend_to_dir, Backend, BackendKind, LocalBackend,
    RayBackend, DEFAULT_PYTHON, MAX_RETRIES,
};
use std::path::{Path, PathBuf};

/// Backend options of `peregrine sim --sweep`.
#[derive(Args, Debug, Clone, Default)]
pub struct BackendArgs {
    /// Where the runs go: `local` (this machine's cores) or `ray` (a Ray
    /// cluster, through the Python package's runner). Overrides
    /// [sweep] backend; default local. Results are identical.
    #[arg(long, value_name = "local|ray")]
    pub backend: Option<String>,
    /// The Ray cluster (`HOST:PORT` of its head, or `ray://…`). Default:
    /// [sweep] ray_address, else a local Ray started for the sweep.
    #[arg(long, value_name = "ADDR")]
    pub ray_address: Option<String>,
    /// The Python with the peregrine-lab package and Ray (default:
    /// $PEREGRINE_PYTHON, else python3).
    #[arg(long, value_name = "PY")]
    pub python: Option<PathBuf>,
    /// CPUs of the local Ray started when no --ray-address is given
    /// (default: all).
    #[arg(long, value_name = "N")]
    pub ray_cpus: Option<usize>,
    /// Keep the runs already in DIR/runs.jsonl (of an interrupted sweep
    /// of the same scenario and grid) and run only the missing ones.
    #[arg(long)]
    pub resume: bool,
}

/// Run the sweep on the chosen backend and print its table; `engine`
/// is one local run.
#[allow(clippy::too_many_arguments)] // the command's parts, one by one
pub fn run(
    backend_args: &BackendArgs,
    figures: &crate::figure_args::FigureArgs,
    doc: &toml::Value,
    origin: &str,
    base_dir: Option<&Path>,
    title: &str,
    description: &str,
    options: &SweepOptions,
    quiet: bool,
    dir: &Path,
    engine: impl Fn(&toml::Value, u64) -> anyhow::Result<serde_json::Value> + Sync,
) -> Result<()> {
    let (kind, address) = resolve_backend(
        doc,
        backend_args.backend.as_deref(),
        backend_args.ray_address.as_deref(),
    )?;
    let backend: Box<dyn Backend + '_> = match kind {
        BackendKind::Local => Box::new(LocalBackend {
            threads: options.threads,
            run: engine,
        }),
        BackendKind::Ray => Box::new(RayBackend {
            python: backend_args
                .python
                .clone()
                .or_else(|| std::env::var_os("PEREGRINE_PYTHON").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from(DEFAULT_PYTHON)),
            address,
            num_cpus: backend_args.ray_cpus,
            base_dir: base_dir.map(Path::to_path_buf),
            origin: origin.to_string(),
            max_retries: MAX_RETRIES,
        }),
    };
    catch_interrupt();
    let run = run_sweep_backend_to_dir(
        title,
        description,
        doc,
        options,
        backend_args.resume,
        dir,
        &Bar::new(quiet),
        backend.as_ref(),
    )?;
    let files = &run.files;
    crate::out(&summary_table(&files.aggregate))?;
    let mut counts = format!("{} runs ({} backend)", run.ran + run.reused, run.backend);
    if backend_args.resume {
        counts.push_str(&format!(
            "; {} read back from runs.jsonl, {} run now",
            run.reused, run.ran
        ));
    }
    if run.retries > 0 {
        counts.push_str(&format!(
            "; {} retried after their worker was lost",
            run.retries
        ));
    }
    crate::out(&format!(
        "\n{counts}; wrote {}, {}, {}, {}, {} and plots/\n",
        files.report.display(),
        files.csv.display(),
        files.json.display(),
        files.runs.display(),
        files.parquet.display(),
    ))?;
    figures.export(&dir.join("plots"))
}
