//! Where a sweep's runs go, and sweeps that survive an interruption:
//! `peregrine sim … --sweep … [--backend local|ray] [--ray-address ADDR]
//! [--resume]`.
//!
//! [`run_sweep_backend_to_dir`] plans every (grid point, seed) run with
//! the sweep runner itself ([`plan`]: the very documents the local
//! runner builds), hands the runs still missing to a [`Backend`] and
//! writes the results with [`write_sweep_files`] — the same writer for
//! every backend, so `sweep.csv`, `sweep.json`, `runs.jsonl`,
//! `runs.parquet` and `report.md` are byte-identical whichever backend
//! ran them. Two backends:
//!
//! * [`LocalBackend`]: this machine's cores (rayon), as before;
//! * [`RayBackend`]: a Ray cluster, through the Python package's runner
//!   `python -m peregrine.ray_sweep` (the CLI cannot speak Ray's protocol
//!   itself; the runner is the same code `peregrine.sweep(backend="ray")`
//!   uses). The plan goes to the runner's stdin as one JSON document and
//!   its events come back as JSON lines on its stdout (see
//!   `crates/py/python/peregrine/ray_sweep.py` for the protocol).
//!
//! **No shared filesystem**: before the runs go to Ray, every string of a
//! run document that names an existing file (resolved as the engine
//! resolves it, `Scenario::resolve_path`) is rewritten to a bundle name
//! `peregrine-files/<k>/<file name>` ([`bundle_files`]). The runner reads
//! those files on the submitting machine, puts their bytes into Ray's
//! object store once, and each task writes them into its own temporary
//! folder and runs there: a worker never reads a path of the submitter.
//!
//! **Faults**: a run whose worker process or node dies is submitted
//! again, at most [`MAX_RETRIES`] times (each retry is reported through
//! [`Progress::warn`] and counted in [`SweepRun::retries`]); a run that
//! fails by itself (a bad document, an engine error) is not retried: it
//! would fail again.
//!
//! **Resume**: when the sweep stops early — Ctrl-C ([`catch_interrupt`]),
//! a failed run, a dead cluster — the runs that finished are written to
//! `runs.jsonl` (in (point, seed) order) with `sweep-state.json`
//! (`{"fingerprint", "runs_total", "runs_done", "complete"}`), and the
//! error says how many are kept. With `resume`, the runs already in
//! `runs.jsonl` are read back and only the missing ones are run; the
//! fingerprint (a hash of every run's document) must match, so results
//! of another scenario or grid are never mixed in.

use crate::experiment::{self, SweepOutcome, SweepPoint, SweepSpec};
use crate::progress::Progress;
use crate::sweep::{run_line, write_sweep_files, SweepFiles, SweepOptions};
use anyhow::{bail, Context};
use peregrine_sim::scenario::find_upwards;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How many times a run whose worker died is submitted again.
pub const MAX_RETRIES: u32 = 3;

/// The file beside `runs.jsonl` that says which sweep it belongs to.
pub const STATE_FILE: &str = "sweep-state.json";

/// The folder name under which bundled files travel with a task.
pub const BUNDLE_DIR: &str = "peregrine-files";

/// The Python the Ray backend runs when neither `--python` nor
/// `PEREGRINE_PYTHON` names one.
pub const DEFAULT_PYTHON: &str = "python3";

/// Where a sweep's runs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// This machine's cores.
    Local,
    /// A Ray cluster, through the Python runner.
    Ray,
}

impl BackendKind {
    /// `local` or `ray`; `field` names where the text came from.
    pub fn parse(text: &str, field: &str) -> anyhow::Result<BackendKind> {
        match text {
            "local" => Ok(BackendKind::Local),
            "ray" => Ok(BackendKind::Ray),
            other => bail!("`{field}` must be \"local\" or \"ray\", found {other:?}"),
        }
    }
}

/// The backend of a sweep: the command line laid over the document's
/// `[sweep] backend` and `ray_address`. Returns the kind and the Ray
/// address (None: start a local Ray). Errors name the bad field.
pub fn resolve_backend(
    doc: &toml::Value,
    backend: Option<&str>,
    ray_address: Option<&str>,
) -> anyhow::Result<(BackendKind, Option<String>)> {
    let sweep = doc.get("sweep");
    let text_field = |name: &str| -> anyhow::Result<Option<String>> {
        match sweep.and_then(|s| s.get(name)) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => bail!(
                "`sweep.{name}` must be a string, found {}",
                other.type_str()
            ),
        }
    };
    let kind = match backend {
        Some(b) => BackendKind::parse(b, "--backend")?,
        None => match text_field("backend")? {
            Some(b) => BackendKind::parse(&b, "sweep.backend")?,
            None => BackendKind::Local,
        },
    };
    let address = match ray_address {
        Some(a) => Some(a.to_string()),
        None => text_field("ray_address")?,
    };
    if kind == BackendKind::Local && ray_address.is_some() {
        bail!("`--ray-address` needs `--backend ray` (or `[sweep] backend = \"ray\"`)");
    }
    if let Some(a) = &address {
        if a.trim().is_empty() {
            bail!("`--ray-address`/`sweep.ray_address` is empty");
        }
    }
    Ok((kind, address))
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Position in (point, seed) order: `point × seeds + i`.
    pub index: usize,
    /// The grid point's index.
    pub point: usize,
    /// The grid point's label (`runs.jsonl`'s `point`).
    pub label: String,
    /// The run's seed.
    pub seed: u64,
    /// The run's whole document (overrides and seed applied, `[sweep]`
    /// removed), as the local runner builds it.
    pub doc: toml::Value,
}

/// Every run of a sweep, in (point, seed) order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sweep.
    pub spec: SweepSpec,
    /// Its points.
    pub points: Vec<SweepPoint>,
    /// The seed of every point's first run.
    pub base_seed: u64,
    /// The runs.
    pub jobs: Vec<Job>,
}

impl Plan {
    /// A hash of every run's document and seed (FNV-1a, 64 bits, hex):
    /// two plans with the same fingerprint run the same documents.
    pub fn fingerprint(&self) -> anyhow::Result<String> {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for j in &self.jobs {
            let text = toml::to_string(&j.doc).context("a run's document")?;
            for b in format!("{}\n{}\n{text}\n", j.label, j.seed).bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        Ok(format!("{h:016x}"))
    }
}

/// The runs of `spec` over `base`: built by [`experiment::run_sweep`]
/// itself (one thread, no engine), so every backend runs exactly the
/// documents the local runner runs. O(runs × document size).
pub fn plan(base: &toml::Value, spec: &SweepSpec) -> anyhow::Result<Plan> {
    let docs = experiment::run_sweep::<_, std::convert::Infallible, _>(
        base,
        spec,
        1,
        &|_, _| {},
        |d, s| Ok((d.clone(), s)),
    )
    .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let seeds = spec.seeds as usize;
    let mut jobs = Vec::with_capacity(docs.points.len() * seeds);
    for (p, runs) in docs.points.iter().zip(docs.runs) {
        for (i, (doc, seed)) in runs.into_iter().enumerate() {
            jobs.push(Job {
                index: p.index * seeds + i,
                point: p.index,
                label: p.label.clone(),
                seed,
                doc,
            });
        }
    }
    Ok(Plan {
        spec: docs.spec,
        points: docs.points,
        base_seed: docs.base_seed,
        jobs,
    })
}

/// What a backend reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The backend is up (a short description: `Ray: 2 nodes, 1 CPUs`).
    Ready(String),
    /// Run `job` ([`Job::index`]) finished with this summary.
    Done {
        /// The run's index.
        job: usize,
        /// Its summary.
        summary: Json,
    },
    /// Run `job` failed by itself (not retried).
    Failed {
        /// The run's index.
        job: usize,
        /// Why.
        error: String,
    },
    /// Run `job` lost its worker and was submitted again.
    Retry {
        /// The run's index.
        job: usize,
        /// 1 for the first retry.
        attempt: u32,
        /// What happened to the worker.
        reason: String,
    },
}

/// Runs a sweep's jobs somewhere.
pub trait Backend {
    /// `local` or `ray`.
    fn name(&self) -> &'static str;
    /// Run `jobs`, reporting each through `on_event` (from the calling
    /// thread, in completion order). Returns when every job is done or
    /// failed; [`Interrupted`] when [`interrupted`] became true (the runs
    /// in flight are abandoned, the finished ones were reported).
    fn run(&self, jobs: &[&Job], on_event: &mut dyn FnMut(Event)) -> anyhow::Result<()>;
}

/// The sweep stopped on Ctrl-C (SIGINT) or SIGTERM.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // A second Ctrl-C means "now": leave without writing anything.
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// From now on, Ctrl-C (SIGINT) and SIGTERM set [`interrupted`] instead of
/// killing the process, so a sweep can keep what finished; a second one
/// exits at once (status 130).
pub fn catch_interrupt() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls _exit,
        // both async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Whether Ctrl-C or SIGTERM arrived since [`catch_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// This machine's cores: the engine closure on a rayon pool.
pub struct LocalBackend<F> {
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// One run: its document and seed → its summary.
    pub run: F,
}

impl<F> Backend for LocalBackend<F>
where
    F: Fn(&toml::Value, u64) -> anyhow::Result<Json> + Sync,
{
    fn name(&self) -> &'static str {
        "local"
    }

    fn run(&self, jobs: &[&Job], on_event: &mut dyn FnMut(Event)) -> anyhow::Result<()> {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .thread_name(|i| format!("sweep-{i}"))
            .build()
            .context("cannot start the sweep's thread pool")?;
        let (tx, rx) = mpsc::channel::<Event>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                pool.install(|| {
                    jobs.par_iter().for_each_with(tx, |tx, job| {
                        // No new run starts after Ctrl-C.
                        if interrupted() {
                            return;
                        }
                        let event = match (self.run)(&job.doc, job.seed) {
                            Ok(summary) => Event::Done {
                                job: job.index,
                                summary,
                            },
                            Err(e) => Event::Failed {
                                job: job.index,
                                error: format!("{e:#}"),
                            },
                        };
                        let _ = tx.send(event);
                    });
                });
            });
            for event in rx {
                on_event(event);
            }
        });
        if interrupted() {
            return Err(Interrupted.into());
        }
        Ok(())
    }
}

/// The files the runs name, rewritten to bundle names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bundle {
    /// `(bundle name, path on this machine)`, in first-use order.
    pub files: Vec<(String, PathBuf)>,
    /// Each job's document with its file names rewritten, by job order.
    pub docs: Vec<toml::Value>,
}

/// Rewrite every string of the jobs' documents that names an existing
/// file (as `resolve` finds it: [`scenario_files`]) to
/// `peregrine-files/<k>/<file name>`, one `k` per distinct file. A task
/// that writes each file's bytes under that name in a folder and resolves
/// paths against it runs the same scenario. O(strings × a `stat`).
pub fn bundle_files(jobs: &[&Job], resolve: &dyn Fn(&str) -> Option<PathBuf>) -> Bundle {
    let mut names: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut bundle = Bundle::default();
    for job in jobs {
        let mut doc = job.doc.clone();
        rewrite(&mut doc, &mut |s: &str| {
            let path = resolve(s)?;
            let next = names.len();
            let name = names
                .entry(path.clone())
                .or_insert_with(|| {
                    let file = path
                        .file_name()
                        .map_or_else(|| "file".into(), |f| f.to_string_lossy().into_owned());
                    let name = format!("{BUNDLE_DIR}/{next}/{file}");
                    bundle.files.push((name.clone(), path.clone()));
                    name
                })
                .clone();
            Some(name)
        });
        bundle.docs.push(doc);
    }
    bundle
}

/// Replace every string `s` of `v` for which `f(s)` is `Some`.
fn rewrite(v: &mut toml::Value, f: &mut dyn FnMut(&str) -> Option<String>) {
    match v {
        toml::Value::String(s) => {
            if let Some(new) = f(s) {
                *s = new;
            }
        }
        toml::Value::Array(items) => items.iter_mut().for_each(|i| rewrite(i, f)),
        toml::Value::Table(t) => t.iter_mut().for_each(|(_, i)| rewrite(i, f)),
        _ => {}
    }
}

/// The resolver of [`bundle_files`] for a scenario whose relative paths
/// resolve against `base_dir`: the engine's own lookup
/// (`Scenario::resolve_path`: absolute paths as they are, relative ones
/// from `base_dir` and each folder above it, then from the working
/// directory and each folder above it), kept only when it finds a
/// regular file and the string looks like a path (has a `/` or a `.`), so
/// names such as `cc = "bbr"` never match a stray file.
pub fn scenario_files(base_dir: Option<PathBuf>) -> impl Fn(&str) -> Option<PathBuf> {
    move |s: &str| {
        if s.is_empty() || !(s.contains('/') || s.contains('.')) || s.contains('\n') {
            return None;
        }
        let p = Path::new(s);
        let found = if p.is_absolute() {
            Some(p.to_path_buf())
        } else {
            base_dir
                .as_deref()
                .and_then(|d| find_upwards(d, p))
                .or_else(|| {
                    std::env::current_dir()
                        .ok()
                        .and_then(|d| find_upwards(&d, p))
                })
        }?;
        found
            .is_file()
            .then(|| found.canonicalize().unwrap_or(found))
    }
}

/// A Ray cluster, through `python -m peregrine.ray_sweep`.
#[derive(Debug, Clone)]
pub struct RayBackend {
    /// The Python with the `peregrine-lab` package and Ray installed.
    pub python: PathBuf,
    /// The cluster (`host:port`, `ray://…`); None: a local Ray started for
    /// the sweep and stopped after it.
    pub address: Option<String>,
    /// CPUs of that local Ray (None: Ray's default, all cores).
    pub num_cpus: Option<usize>,
    /// The folder the scenario's relative paths resolve against.
    pub base_dir: Option<PathBuf>,
    /// The scenario's origin (for error messages).
    pub origin: String,
    /// Retries of a run whose worker died ([`MAX_RETRIES`]).
    pub max_retries: u32,
}

/// The plan document on the runner's stdin.
#[derive(Serialize)]
struct RayPlan<'a> {
    protocol: u32,
    address: Option<&'a str>,
    num_cpus: Option<usize>,
    max_retries: u32,
    origin: &'a str,
    files: Vec<RayFile>,
    runs: Vec<RayRun>,
}

#[derive(Serialize)]
struct RayFile {
    name: String,
    path: String,
}

#[derive(Serialize)]
struct RayRun {
    job: usize,
    label: String,
    seed: u64,
    toml: String,
}

/// One line of the runner's stdout.
#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
enum RayLine {
    Ready {
        #[serde(default)]
        nodes: usize,
        #[serde(default)]
        cpus: f64,
    },
    Done {
        job: usize,
        summary: String,
    },
    Failed {
        job: usize,
        error: String,
    },
    Retry {
        job: usize,
        attempt: u32,
        reason: String,
    },
    Fatal {
        error: String,
    },
}

/// The last `MAX` bytes of a child's stderr.
struct Tail(Mutex<String>);

impl Tail {
    const MAX: usize = 4000;
    fn push(&self, line: &str) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        t.push_str(line);
        t.push('\n');
        if t.len() > Self::MAX {
            let cut = t.len() - Self::MAX;
            let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
            t.drain(..cut);
        }
    }
    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl RayBackend {
    /// The plan the runner reads on its stdin (JSON, protocol 1; see
    /// `peregrine.ray_sweep`): `jobs` with their files bundled
    /// ([`bundle_files`]), the cluster and the retry limit.
    /// O(jobs × document size).
    pub fn plan_json(&self, jobs: &[&Job]) -> anyhow::Result<Vec<u8>> {
        let bundle = bundle_files(jobs, &scenario_files(self.base_dir.clone()));
        let runs = jobs
            .iter()
            .zip(&bundle.docs)
            .map(|(j, doc)| {
                Ok(RayRun {
                    job: j.index,
                    label: j.label.clone(),
                    seed: j.seed,
                    toml: toml::to_string(doc).context("a run's document")?,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let plan = RayPlan {
            protocol: 1,
            address: self.address.as_deref(),
            num_cpus: self.num_cpus,
            max_retries: self.max_retries,
            origin: &self.origin,
            files: bundle
                .files
                .iter()
                .map(|(name, path)| RayFile {
                    name: name.clone(),
                    path: path.display().to_string(),
                })
                .collect(),
            runs,
        };
        serde_json::to_vec(&plan).context("the Ray plan")
    }

    /// The runner's failure in words, from its stderr.
    fn explain(&self, status: &str, tail: &str) -> anyhow::Error {
        let py = self.python.display();
        if tail.contains("No module named 'peregrine'")
            || tail.contains("No module named peregrine")
        {
            anyhow::anyhow!(
                "the Python package `peregrine-lab` is not installed in {py} (install it with \
                 `pip install ./crates/py`, or point --python/PEREGRINE_PYTHON at a Python that \
                 has it)"
            )
        } else {
            anyhow::anyhow!(
                "the Ray runner (`{py} -m peregrine.ray_sweep`) stopped ({status}); its last \
                 words:\n{}",
                tail.trim_end()
            )
        }
    }
}

impl Backend for RayBackend {
    fn name(&self) -> &'static str {
        "ray"
    }

    // The runner is a child process: its stdin, stdout and stderr each need
    // a thread so that none of the pipes fills up and blocks it.
    #[allow(clippy::disallowed_methods)]
    fn run(&self, jobs: &[&Job], on_event: &mut dyn FnMut(Event)) -> anyhow::Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        let plan = self.plan_json(jobs)?;
        let mut child = Command::new(&self.python)
            .args(["-m", "peregrine.ray_sweep"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    anyhow::anyhow!(
                        "cannot run Python `{}`: not found (give one with the Ray and \
                         peregrine-lab packages by --python or PEREGRINE_PYTHON)",
                        self.python.display()
                    )
                } else {
                    anyhow::anyhow!("cannot run Python `{}`: {e}", self.python.display())
                }
            })?;
        let mut stdin = child.stdin.take().context("the runner's stdin")?;
        let stdout = child.stdout.take().context("the runner's stdout")?;
        let mut stderr = child.stderr.take().context("the runner's stderr")?;
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&plan);
            // Dropping stdin closes it: the plan is complete.
        });
        let tail = Arc::new(Tail(Mutex::new(String::new())));
        let err_tail = tail.clone();
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            for line in String::from_utf8_lossy(&buf).lines() {
                err_tail.push(line);
            }
        });
        let (tx, rx) = mpsc::channel::<std::io::Result<String>>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut fatal: Option<String> = None;
        let mut stopped = false;
        loop {
            if interrupted() && !stopped {
                // Ctrl-C: the runner cancels what is in flight and exits;
                // what it reported so far is kept.
                stopped = true;
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            }
            let line = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Ok(line)) => line,
                Ok(Err(e)) => {
                    fatal = Some(format!("reading the runner's output: {e}"));
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            if line.trim().is_empty() {
                continue;
            }
            let parsed: RayLine = match serde_json::from_str(&line) {
                Ok(p) => p,
                // Not an event (a library printing to stdout): keep it
                // with the runner's other words.
                Err(_) => {
                    tail.push(&line);
                    continue;
                }
            };
            match parsed {
                RayLine::Ready { nodes, cpus } => {
                    on_event(Event::Ready(format!("Ray: {nodes} node(s), {cpus} CPUs")))
                }
                RayLine::Done { job, summary } => {
                    let summary: Json = serde_json::from_str(&summary)
                        .with_context(|| format!("run {job}'s summary from Ray"))?;
                    on_event(Event::Done { job, summary });
                }
                RayLine::Failed { job, error } => on_event(Event::Failed { job, error }),
                RayLine::Retry {
                    job,
                    attempt,
                    reason,
                } => on_event(Event::Retry {
                    job,
                    attempt,
                    reason,
                }),
                RayLine::Fatal { error } => fatal = Some(error),
            }
        }
        let _ = writer.join();
        let status = child.wait().context("waiting for the Ray runner")?;
        let _ = err_reader.join();
        if stopped || interrupted() {
            return Err(Interrupted.into());
        }
        if let Some(e) = fatal {
            bail!("Ray: {e}");
        }
        if !status.success() {
            return Err(self.explain(&status.to_string(), &tail.text()));
        }
        Ok(())
    }
}

/// What [`run_sweep_backend_to_dir`] did.
#[derive(Debug, Clone)]
pub struct SweepRun {
    /// The files written and the results.
    pub files: SweepFiles<Json>,
    /// Runs run now.
    pub ran: usize,
    /// Runs read back from `runs.jsonl` (`resume`).
    pub reused: usize,
    /// Runs submitted again after their worker died.
    pub retries: usize,
    /// The backend's name.
    pub backend: &'static str,
}

/// `sweep-state.json`.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    fingerprint: String,
    runs_total: usize,
    runs_done: usize,
    complete: bool,
}

/// A line of `runs.jsonl`, read back.
#[derive(Deserialize)]
struct ReadLine {
    point: String,
    seed: u64,
    summary: Json,
}

/// The runs `runs.jsonl` in `out_dir` holds, by job index, checked
/// against `plan` (errors name the file and line).
fn finished_runs(plan: &Plan, out_dir: &Path) -> anyhow::Result<BTreeMap<usize, Json>> {
    let runs_path = out_dir.join("runs.jsonl");
    let state_path = out_dir.join(STATE_FILE);
    let mut done = BTreeMap::new();
    if !runs_path.exists() {
        return Ok(done);
    }
    let state_text = std::fs::read_to_string(&state_path).with_context(|| {
        format!(
            "--resume: {} has runs.jsonl but no {STATE_FILE}, so which sweep it belongs to is \
             unknown: run without --resume or with another --out",
            out_dir.display()
        )
    })?;
    let state: State = serde_json::from_str(&state_text)
        .with_context(|| format!("{}: not a sweep state", state_path.display()))?;
    if state.fingerprint != plan.fingerprint()? {
        bail!(
            "--resume: {} holds runs of another sweep (the scenario, --set, grid or seeds \
             differ; fingerprint {} here, {} now): run without --resume or with another --out",
            out_dir.display(),
            state.fingerprint,
            plan.fingerprint()?
        );
    }
    let by_key: BTreeMap<(&str, u64), usize> = plan
        .jobs
        .iter()
        .map(|j| ((j.label.as_str(), j.seed), j.index))
        .collect();
    let text = std::fs::read_to_string(&runs_path)
        .with_context(|| format!("cannot read {}", runs_path.display()))?;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: ReadLine = serde_json::from_str(line)
            .with_context(|| format!("{} line {}", runs_path.display(), n + 1))?;
        let Some(&j) = by_key.get(&(r.point.as_str(), r.seed)) else {
            bail!(
                "{} line {}: point `{}` with seed {} is not a run of this sweep",
                runs_path.display(),
                n + 1,
                r.point,
                r.seed
            );
        };
        done.insert(j, r.summary);
    }
    Ok(done)
}

/// Write the finished runs (in (point, seed) order) and the state.
fn write_partial(plan: &Plan, done: &BTreeMap<usize, Json>, out_dir: &Path) -> anyhow::Result<()> {
    let mut text = String::new();
    for (j, summary) in done {
        let job = &plan.jobs[*j];
        text.push_str(&run_line(&job.label, job.seed, summary)?);
    }
    let path = out_dir.join("runs.jsonl");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    write_state(plan, done.len(), out_dir)
}

/// Write `sweep-state.json`: `runs_done` of the plan's runs are in
/// `runs.jsonl`.
fn write_state(plan: &Plan, runs_done: usize, out_dir: &Path) -> anyhow::Result<()> {
    let state = State {
        fingerprint: plan.fingerprint()?,
        runs_total: plan.jobs.len(),
        runs_done,
        complete: runs_done == plan.jobs.len(),
    };
    let path = out_dir.join(STATE_FILE);
    let mut text = serde_json::to_string_pretty(&state)?;
    text.push('\n');
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Run the sweep of `base` (its `[sweep]` table with `args` laid over it)
/// on `backend` into `out_dir`, as [`crate::sweep::run_sweep_to_dir`]
/// does, keeping what finished when it stops early; with `resume`, only
/// the runs missing from `out_dir/runs.jsonl` run (see the module docs).
/// Cost: the missing runs, then O(runs × numbers per summary).
#[allow(clippy::too_many_arguments)] // the sweep's settings, one by one
pub fn run_sweep_backend_to_dir(
    title: &str,
    description: &str,
    base: &toml::Value,
    args: &SweepOptions,
    resume: bool,
    out_dir: &Path,
    progress: &dyn Progress,
    backend: &dyn Backend,
) -> anyhow::Result<SweepRun> {
    let spec = args.spec(base)?;
    let plan = plan(base, &spec)?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut done = if resume {
        finished_runs(&plan, out_dir)?
    } else {
        BTreeMap::new()
    };
    let reused = done.len();
    let missing: Vec<&Job> = plan
        .jobs
        .iter()
        .filter(|j| !done.contains_key(&j.index))
        .collect();
    let total = missing.len();
    if reused > 0 {
        progress.warn(&format!(
            "resuming: {reused} of {} runs already in {}; running the {total} missing",
            plan.jobs.len(),
            out_dir.join("runs.jsonl").display()
        ));
    }
    progress.start(title, total);
    let mut retries = 0;
    let mut failures: BTreeMap<usize, String> = BTreeMap::new();
    let mut finished = 0;
    let result = backend.run(&missing, &mut |event| match event {
        Event::Ready(what) => progress.status(&format!("{title} ({what})")),
        Event::Done { job, summary } => {
            if job < plan.jobs.len() && done.insert(job, summary).is_none() {
                finished += 1;
                progress.update(finished, total);
            }
        }
        Event::Failed { job, error } => {
            failures.insert(job, error);
        }
        Event::Retry {
            job,
            attempt,
            reason,
        } => {
            retries += 1;
            if let Some(j) = plan.jobs.get(job) {
                progress.warn(&format!(
                    "run of sweep point `{}` with seed {} lost its worker ({reason}); retry \
                     {attempt} of {MAX_RETRIES}",
                    j.label, j.seed
                ));
            }
        }
    });
    progress.finish();
    let stopped = match (&result, failures.first_key_value()) {
        // Every run finished before the interruption took effect: done.
        (Err(e), None) if e.is::<Interrupted>() && done.len() == plan.jobs.len() => None,
        (Err(e), _) => Some(if e.is::<Interrupted>() {
            "interrupted".to_string()
        } else {
            format!("{e:#}")
        }),
        (Ok(()), Some((j, error))) => {
            let job = &plan.jobs[*j];
            Some(format!(
                "run of sweep point `{}` with seed {} failed ({} of {} runs failed): {error}",
                job.label,
                job.seed,
                failures.len(),
                plan.jobs.len()
            ))
        }
        (Ok(()), None) if done.len() < plan.jobs.len() => Some(format!(
            "the {} backend returned without {} of the runs",
            backend.name(),
            plan.jobs.len() - done.len()
        )),
        (Ok(()), None) => None,
    };
    if let Some(why) = stopped {
        write_partial(&plan, &done, out_dir)?;
        bail!(
            "{why}; {} of {} runs finished and are kept in {} — run the same command with \
             --resume to run the {} missing",
            done.len(),
            plan.jobs.len(),
            out_dir.join("runs.jsonl").display(),
            plan.jobs.len() - done.len()
        );
    }
    let seeds = spec.seeds as usize;
    let mut runs: Vec<Vec<Json>> = Vec::with_capacity(plan.points.len());
    for (j, summary) in std::mem::take(&mut done) {
        if j % seeds == 0 {
            runs.push(Vec::with_capacity(seeds));
        }
        if let Some(row) = runs.last_mut() {
            row.push(summary);
        }
    }
    let outcome = SweepOutcome {
        spec: plan.spec.clone(),
        points: plan.points.clone(),
        base_seed: plan.base_seed,
        runs,
    };
    let files = write_sweep_files(title, description, &spec, outcome, out_dir)?;
    write_state(&plan, plan.jobs.len(), out_dir)?;
    Ok(SweepRun {
        files,
        ran: total,
        reused,
        retries,
        backend: backend.name(),
    })
}
