//! `peregrine._native`: the Rust half of the Python package `peregrine`.
//!
//! Thin glue over `peregrine-sim` and `peregrine-lab`: scenarios are kept
//! as TOML documents (validated on construction), runs and sweeps call
//! the same functions as `peregrine sim` and `peregrine sim --sweep`, and
//! results cross to Python as JSON text (summaries, parsed by `json`) or
//! as columns (CSV text and raw little-endian buffers that the Python
//! half turns into Arrow arrays and pandas DataFrames, never row by row).
//! The Python-facing API, its docstrings and stubs are in
//! `python/peregrine/`.
//!
//! Every simulation runs with the GIL released. Long calls (sweeps, a
//! single run) run on a worker thread while the calling thread waits in
//! 100 ms steps, checking for signals, so Ctrl-C (KeyboardInterrupt)
//! stops a sweep: no new run starts and the call returns once the runs
//! in flight end.

use peregrine_lab::experiment::{self, Aggregate, SweepOutcome, SweepSpec};
use peregrine_lab::Progress;
use peregrine_sim::scenario::ScenarioDocument;
use peregrine_sim::{Scenario, ScenarioError as SimScenarioError};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

create_exception!(
    peregrine,
    ScenarioError,
    PyValueError,
    "A scenario is invalid. `field` is the dotted path of the bad field (`flows.0.cc`), `origin` the file or label."
);

fn scenario_err(py: Python<'_>, e: &SimScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("field", e.field.clone());
    let _ = value.setattr("origin", e.origin.clone());
    let _ = value.setattr("reason", e.message.clone());
    err
}

fn runtime(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A Python value (bool, int, float, str, list/tuple, dict) as TOML.
fn to_toml(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<toml::Value> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(obj.extract()?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(obj.extract()?));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, v) in d.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("{path}: keys must be strings")))?;
            let sub = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            t.insert(key, to_toml(&v, &sub)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, v) in obj.try_iter()?.enumerate() {
            items.push(to_toml(&v?, &format!("{path}.{i}"))?);
        }
        return Ok(toml::Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "{}: cannot be given as {} (use bool, int, float, str, list or dict)",
        if path.is_empty() { "(document)" } else { path },
        obj.get_type().name()?
    )))
}

/// A TOML value as a Python object (datetimes as their TOML text).
fn from_toml(py: Python<'_>, v: &toml::Value) -> PyResult<PyObject> {
    Ok(match v {
        toml::Value::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        toml::Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any().unbind(),
        toml::Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_toml(py, item)?)?;
            }
            list.into_any().unbind()
        }
        toml::Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, item) in t {
                d.set_item(k, from_toml(py, item)?)?;
            }
            d.into_any().unbind()
        }
    })
}

/// Lay `set` (dotted key → value) over `doc`, through the scenario
/// document's one override function (the one `--set` uses).
fn apply_set(
    py: Python<'_>,
    doc: &mut ScenarioDocument,
    set: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let Some(set) = set else { return Ok(()) };
    for (k, v) in set.iter() {
        let key: String = k.extract()?;
        let value = to_toml(&v, &key)?;
        doc.set(&key, value).map_err(|e| scenario_err(py, &e))?;
    }
    Ok(())
}

/// A validated scenario: the scenario document (overrides applied, its
/// origin and the folder its relative paths resolve against) that
/// `peregrine sim` reads too.
#[pyclass(module = "peregrine._native", name = "Scenario", frozen)]
#[derive(Clone)]
struct PyScenario {
    doc: ScenarioDocument,
}

impl PyScenario {
    /// Validate `doc` (O(scenario size)).
    fn new(py: Python<'_>, doc: ScenarioDocument) -> PyResult<PyScenario> {
        let s = PyScenario { doc };
        s.build_with(s.doc.value())
            .map_err(|e| scenario_err(py, &e))?;
        Ok(s)
    }

    /// The engine's scenario from one run's document (a `[sweep]` table
    /// describes a sweep; one run ignores it).
    fn build_with(&self, doc: &toml::Value) -> Result<Scenario, SimScenarioError> {
        self.doc.run_scenario(doc.clone())
    }
}

/// Run `work` on a worker thread with the GIL released; the calling
/// thread wakes every 100 ms to report `progress` and to check for
/// signals. On a signal, `cancel` is set, the worker is awaited and the
/// signal's exception (KeyboardInterrupt) is raised.
fn run_interruptible<T: Send + 'static>(
    py: Python<'_>,
    cancel: Arc<AtomicBool>,
    mut on_tick: impl FnMut(Python<'_>) -> PyResult<()>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    // `allow_threads` needs a `Sync` borrow: the receiver is only ever
    // used by this thread.
    let rx = std::sync::Mutex::new(rx);
    let recv = |timeout: Option<Duration>| {
        let rx = rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match timeout {
            Some(t) => rx.recv_timeout(t),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        }
    };
    let handle = std::thread::Builder::new()
        .name("peregrine-py".into())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(runtime)?;
    loop {
        let got = py.allow_threads(|| recv(Some(Duration::from_millis(100))));
        match got {
            Ok(v) => {
                let _ = handle.join();
                on_tick(py)?;
                return Ok(v);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = handle.join();
                return Err(runtime("the worker thread panicked"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Err(e) = py.check_signals().and_then(|()| on_tick(py)) {
            cancel.store(true, Ordering::SeqCst);
            // Let the runs in flight finish; none starts after the flag.
            py.allow_threads(|| {
                let _ = recv(None);
                let _ = handle.join();
            });
            return Err(e);
        }
    }
}

/// Write `text` to Python's `sys.stderr` (so notebooks show it).
fn stderr(py: Python<'_>, text: &str) -> PyResult<()> {
    let err = py.import("sys")?.getattr("stderr")?;
    err.call_method1("write", (text,))?;
    err.call_method0("flush")?;
    Ok(())
}

#[pymethods]
impl PyScenario {
    /// Read a scenario file and lay `set` (dotted key → value) over it.
    #[staticmethod]
    #[pyo3(signature = (path, set=None))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        set: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyScenario> {
        let mut doc = ScenarioDocument::read(&path, &[]).map_err(|e| scenario_err(py, &e))?;
        apply_set(py, &mut doc, set)?;
        PyScenario::new(py, doc)
    }

    /// A scenario from TOML text.
    #[staticmethod]
    #[pyo3(signature = (text, set=None, base_dir=None, origin="<toml>".to_string()))]
    fn from_toml(
        py: Python<'_>,
        text: &str,
        set: Option<&Bound<'_, PyDict>>,
        base_dir: Option<PathBuf>,
        origin: String,
    ) -> PyResult<PyScenario> {
        let mut doc = ScenarioDocument::parse(text, &origin)
            .map_err(|e| scenario_err(py, &e))?
            .with_base_dir(base_dir);
        apply_set(py, &mut doc, set)?;
        PyScenario::new(py, doc)
    }

    /// A scenario from a dict shaped like the TOML file.
    #[staticmethod]
    #[pyo3(signature = (doc, set=None, base_dir=None))]
    fn from_dict(
        py: Python<'_>,
        doc: &Bound<'_, PyDict>,
        set: Option<&Bound<'_, PyDict>>,
        base_dir: Option<PathBuf>,
    ) -> PyResult<PyScenario> {
        let mut d = ScenarioDocument::from_value(to_toml(doc.as_any(), "")?, "<dict>")
            .with_base_dir(base_dir);
        apply_set(py, &mut d, set)?;
        PyScenario::new(py, d)
    }

    /// A copy with `set` laid over it.
    fn with_set(&self, py: Python<'_>, set: &Bound<'_, PyDict>) -> PyResult<PyScenario> {
        let mut doc = self.doc.clone();
        apply_set(py, &mut doc, Some(set))?;
        PyScenario::new(py, doc)
    }

    /// The document as TOML text.
    fn to_toml(&self) -> PyResult<String> {
        toml::to_string(self.doc.value()).map_err(runtime)
    }

    /// The document as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<PyObject> {
        from_toml(py, self.doc.value())
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.build_with(self.doc.value()).map_err(runtime)?.name())
    }

    /// Where it came from (a path, `<dict>` or `<toml>`).
    #[getter]
    fn origin(&self) -> String {
        self.doc.origin().to_string()
    }

    /// The folder relative paths (traces) resolve against.
    #[getter]
    fn base_dir(&self) -> Option<PathBuf> {
        self.doc.base_dir().map(Path::to_path_buf)
    }

    /// Simulate once (GIL released); returns the native results.
    #[pyo3(signature = (progress=false))]
    fn run(&self, py: Python<'_>, progress: bool) -> PyResult<PyResults> {
        let scenario = self
            .build_with(self.doc.value())
            .map_err(|e| scenario_err(py, &e))?;
        if progress {
            stderr(py, &format!("peregrine: running {} …", scenario.name()))?;
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let results = run_interruptible(
            py,
            cancel,
            |_| Ok(()),
            move || peregrine_sim::run(&scenario),
        )?
        .map_err(runtime)?;
        if progress {
            stderr(py, &format!(" done ({} events)\n", results.events))?;
        }
        Ok(PyResults { results })
    }

    fn __repr__(&self) -> String {
        format!("Scenario(origin={:?})", self.doc.origin())
    }
}

/// One run's results (native half of `peregrine.Results`).
#[pyclass(module = "peregrine._native", name = "Results", frozen)]
struct PyResults {
    results: peregrine_sim::SimResults,
}

#[pymethods]
impl PyResults {
    /// `summary.json` as JSON text.
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.results.summary_json()).map_err(runtime)
    }
    /// `flows.csv`.
    fn flows_csv(&self) -> String {
        self.results.flows_csv()
    }
    /// `links.csv`.
    fn links_csv(&self) -> String {
        self.results.links_csv()
    }
    /// `timeseries.csv`.
    fn timeseries_csv(&self) -> String {
        self.results.timeseries_csv()
    }
    /// `stream_timeseries.csv`.
    fn stream_timeseries_csv(&self) -> String {
        self.results.stream_timeseries_csv()
    }
    /// `link_timeseries.csv`.
    fn link_timeseries_csv(&self) -> String {
        self.results.link_timeseries_csv()
    }
    /// The delivered messages as columns: `(flow names, flow index
    /// (int64 LE bytes), stream (int64), message (int64), queued_ns
    /// (int64), latency_ns (int64), bytes (int64))`. O(messages).
    fn message_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let m = &self.results.messages;
        let col = |f: &dyn Fn(&peregrine_sim::metrics::MessageRecord) -> i64| {
            let mut out = Vec::with_capacity(m.len() * 8);
            for r in m {
                out.extend_from_slice(&f(r).to_le_bytes());
            }
            PyBytes::new(py, &out)
        };
        let names: Vec<&str> = self.results.flows.iter().map(|f| f.name.as_str()).collect();
        PyTuple::new(
            py,
            [
                PyList::new(py, names)?.into_any(),
                col(&|r| r.flow as i64).into_any(),
                col(&|r| i64::from(r.stream)).into_any(),
                col(&|r| i64::from(r.number)).into_any(),
                col(&|r| r.queued_ns as i64).into_any(),
                col(&|r| r.latency_ns as i64).into_any(),
                col(&|r| i64::from(r.bytes)).into_any(),
            ],
        )
    }
    /// Write `summary.json` and the CSVs into `dir`, as `peregrine sim --out DIR`.
    fn write(&self, dir: PathBuf) -> PyResult<()> {
        self.results.write_to(&dir).map_err(runtime)
    }
    /// Simulated events.
    #[getter]
    fn events(&self) -> u64 {
        self.results.events
    }
    /// The readable table `peregrine sim` prints.
    fn table(&self) -> String {
        self.results.print_table()
    }
}

/// The registered congestion-controller names.
#[pyfunction]
fn controllers() -> Vec<&'static str> {
    peregrine_cc::registry::NAMES.to_vec()
}

/// The stream-scheduler names (a flow's `scheduler` field), from the
/// scheduler registry.
#[pyfunction]
fn schedulers() -> Vec<&'static str> {
    peregrine_proto::sched::registry::names()
}

/// The experiments `reproduce` runs, from the experiment registry.
#[pyfunction]
fn experiments() -> Vec<&'static str> {
    peregrine_lab::registry::runnable_names()
}

/// The link-model names (how a scenario's links are served), from the
/// link-model registry (`peregrine_sim::world::link_registry`).
#[pyfunction]
fn link_models() -> Vec<&'static str> {
    peregrine_sim::world::link_registry::names()
}

/// A sweep's plan: the scenario, its grid and seeds.
#[pyclass(module = "peregrine._native", name = "SweepPlan", frozen)]
struct PySweepPlan {
    scenario: PyScenario,
    spec: SweepSpec,
}

/// Progress reports of a sweep for the waiting Python thread.
struct Counter(AtomicUsize);

impl Progress for Counter {
    fn start(&self, _title: &str, _total: usize) {}
    fn update(&self, done: usize, _total: usize) {
        self.0.fetch_max(done, Ordering::Relaxed);
    }
    fn finish(&self) {}
}

fn bar(done: usize, total: usize) -> String {
    let width = 30;
    let filled = done * width / total.max(1);
    format!(
        "\rsweep [{}{}] {done}/{total}",
        "#".repeat(filled),
        "-".repeat(width - filled)
    )
}

#[pymethods]
impl PySweepPlan {
    /// The plan of sweeping `scenario` over `grid` (dotted key → list of
    /// values, laid over the scenario's own `[sweep.grid]`) with `seeds`
    /// runs per point (None: the scenario's `[sweep] seeds`, else 1).
    #[new]
    #[pyo3(signature = (scenario, grid, seeds=None))]
    fn new(
        py: Python<'_>,
        scenario: &PyScenario,
        grid: &Bound<'_, PyDict>,
        seeds: Option<u32>,
    ) -> PyResult<PySweepPlan> {
        let mut keys = Vec::new();
        for (k, v) in grid.iter() {
            let key: String = k.extract()?;
            let values = match to_toml(&v, &key)? {
                toml::Value::Array(a) if !a.is_empty() => a,
                _ => {
                    return Err(scenario_err(
                        py,
                        &SimScenarioError::new(
                            scenario.doc.origin(),
                            key,
                            "a grid key needs a non-empty list of values",
                        ),
                    ))
                }
            };
            keys.push((key, values));
        }
        let from_doc = SweepSpec::from_document(scenario.doc.value())
            .map_err(|e| {
                scenario_err(
                    py,
                    &SimScenarioError::new(scenario.doc.origin(), "sweep", e.to_string()),
                )
            })?
            .unwrap_or_default();
        let cli = SweepSpec {
            grid: keys,
            seeds: seeds.unwrap_or(1),
        };
        if seeds == Some(0) {
            return Err(PyValueError::new_err("seeds must be at least 1"));
        }
        let spec = from_doc.merge(cli, seeds);
        let plan = PySweepPlan {
            scenario: scenario.clone(),
            spec,
        };
        // Every point must be a valid scenario before any run starts.
        for (doc, _) in plan.documents().map_err(runtime)?.runs.iter().flatten() {
            plan.scenario
                .build_with(doc)
                .map_err(|e| scenario_err(py, &e))?;
        }
        Ok(plan)
    }

    /// Runs: grid points × seeds.
    #[getter]
    fn run_count(&self) -> usize {
        self.spec.run_count()
    }

    /// Every run as `(point, seed, TOML text)` in (point, seed) order: what
    /// the Ray backend ships to its tasks.
    fn runs(&self) -> PyResult<Vec<(usize, u64, String)>> {
        let docs = self.documents().map_err(runtime)?;
        let mut out = Vec::new();
        for (p, runs) in docs.points.iter().zip(&docs.runs) {
            for (doc, seed) in runs {
                out.push((p.index, *seed, toml::to_string(doc).map_err(runtime)?));
            }
        }
        Ok(out)
    }

    /// The plan of `python -m peregrine.ray_sweep` (JSON text, protocol
    /// 1) for every run: the documents the local backend runs, with every
    /// file they name bundled (`peregrine_lab::sweep_backend`), so Ray
    /// workers never read this machine's paths. `job` is the run's index
    /// in (point, seed) order.
    #[pyo3(signature = (address=None, num_cpus=None, max_retries=peregrine_lab::sweep_backend::MAX_RETRIES))]
    fn ray_plan(
        &self,
        address: Option<String>,
        num_cpus: Option<usize>,
        max_retries: u32,
    ) -> PyResult<String> {
        use peregrine_lab::sweep_backend::{plan, RayBackend};
        let plan = plan(self.scenario.doc.value(), &self.spec).map_err(runtime)?;
        let backend = RayBackend {
            python: PathBuf::new(),
            address,
            num_cpus,
            base_dir: self.scenario.doc.base_dir().map(Path::to_path_buf),
            origin: self.scenario.doc.origin().to_string(),
            max_retries,
        };
        let jobs: Vec<_> = plan.jobs.iter().collect();
        let bytes = backend.plan_json(&jobs).map_err(runtime)?;
        String::from_utf8(bytes).map_err(runtime)
    }

    /// Run every (point, seed) on `threads` threads of this process (0: one
    /// per core), GIL released, as `peregrine sim --sweep` does.
    #[pyo3(signature = (threads=0, progress=true))]
    fn run_local(&self, py: Python<'_>, threads: usize, progress: bool) -> PyResult<PySweep> {
        let cancel = Arc::new(AtomicBool::new(false));
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let total = self.spec.run_count();
        let (scenario, spec, flag, count) = (
            self.scenario.clone(),
            self.spec.clone(),
            cancel.clone(),
            counter.clone(),
        );
        let mut shown = usize::MAX;
        let result = run_interruptible(
            py,
            cancel,
            |py| {
                let done = counter.0.load(Ordering::Relaxed);
                if progress && done != shown {
                    shown = done;
                    stderr(py, &bar(done, total))?;
                    if done == total {
                        stderr(py, "\n")?;
                    }
                }
                Ok(())
            },
            move || {
                experiment::run_sweep(
                    scenario.doc.value(),
                    &spec,
                    threads,
                    &|done, total| count.update(done, total),
                    |doc, _seed| {
                        if flag.load(Ordering::SeqCst) {
                            anyhow::bail!("interrupted");
                        }
                        let s = scenario.build_with(doc)?;
                        Ok(peregrine_sim::run(&s)?.summary_json())
                    },
                )
            },
        );
        if result.is_err() && progress {
            stderr(py, "\n")?;
        }
        let outcome = result?.map_err(|e| runtime(format!("{e:#}")))?;
        Ok(PySweep::new(outcome))
    }

    /// The sweep from run summaries computed elsewhere (Ray): `summaries`
    /// holds every run's summary JSON text in (point, seed) order.
    fn collect(&self, summaries: Vec<String>) -> PyResult<PySweep> {
        let docs = self.documents().map_err(runtime)?;
        if summaries.len() != self.spec.run_count() {
            return Err(PyValueError::new_err(format!(
                "expected {} summaries, got {}",
                self.spec.run_count(),
                summaries.len()
            )));
        }
        let seeds = self.spec.seeds as usize;
        let mut runs = Vec::with_capacity(docs.points.len());
        for chunk in summaries.chunks(seeds) {
            runs.push(
                chunk
                    .iter()
                    .map(|s| serde_json::from_str(s))
                    .collect::<Result<Vec<serde_json::Value>, _>>()
                    .map_err(runtime)?,
            );
        }
        Ok(PySweep::new(SweepOutcome {
            spec: docs.spec,
            points: docs.points,
            base_seed: docs.base_seed,
            runs,
        }))
    }
}

impl PySweepPlan {
    /// Every run's document, built by the sweep runner itself (so the
    /// Ray backend runs exactly the documents the local backend runs).
    fn documents(&self) -> anyhow::Result<SweepOutcome<(toml::Value, u64)>> {
        experiment::run_sweep::<_, std::convert::Infallible, _>(
            self.scenario.doc.value(),
            &self.spec,
            1,
            &|_, _| {},
            |d, s| Ok((d.clone(), s)),
        )
        .map_err(|e| anyhow::anyhow!("{e:#}"))
    }
}

/// Simulate one run's TOML document (a Ray task): its summary JSON text.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None, origin="<sweep>".to_string()))]
fn run_document(
    py: Python<'_>,
    text: &str,
    base_dir: Option<PathBuf>,
    origin: String,
) -> PyResult<String> {
    let doc = ScenarioDocument::parse(text, &origin)
        .map_err(|e| scenario_err(py, &e))?
        .with_base_dir(base_dir);
    let scenario = doc
        .run_scenario(doc.value().clone())
        .map_err(|e| scenario_err(py, &e))?;
    let summary = py
        .allow_threads(|| peregrine_sim::run(&scenario).map(|r| r.summary_json()))
        .map_err(runtime)?;
    serde_json::to_string(&summary).map_err(runtime)
}

/// A finished sweep (native half of `peregrine.Sweep`).
#[pyclass(module = "peregrine._native", name = "Sweep", frozen)]
struct PySweep {
    outcome: SweepOutcome,
    aggregate: Aggregate,
}

impl PySweep {
    fn new(outcome: SweepOutcome) -> PySweep {
        let aggregate = experiment::aggregate(&outcome);
        PySweep { outcome, aggregate }
    }
}

#[pymethods]
impl PySweep {
    /// The runs table as Parquet bytes (what `runs.parquet` holds).
    fn runs_parquet<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = peregrine_lab::parquet::runs_parquet(&self.outcome, &self.aggregate)
            .map_err(runtime)?;
        Ok(PyBytes::new(py, &bytes))
    }
    /// `sweep.csv`: the per-point statistics.
    fn aggregate_csv(&self) -> String {
        self.aggregate.to_csv()
    }
    /// `sweep.json`.
    fn aggregate_json(&self) -> String {
        self.aggregate.to_json_string()
    }
    /// The point labels (`cc=bbr,rate=20`), by point index.
    fn labels(&self) -> Vec<String> {
        self.outcome
            .points
            .iter()
            .map(|p| p.label.clone())
            .collect()
    }
    /// Every run's summary JSON text, in (point, seed) order.
    fn summaries(&self) -> PyResult<Vec<String>> {
        self.outcome
            .runs
            .iter()
            .flatten()
            .map(|s| serde_json::to_string(s).map_err(runtime))
            .collect()
    }
    /// The grid: `[(key, [values])]`.
    fn grid(&self, py: Python<'_>) -> PyResult<Vec<(String, Vec<PyObject>)>> {
        self.outcome
            .spec
            .grid
            .iter()
            .map(|(k, vs)| {
                Ok((
                    k.clone(),
                    vs.iter()
                        .map(|v| from_toml(py, v))
                        .collect::<PyResult<_>>()?,
                ))
            })
            .collect()
    }
    /// Seeds per point.
    #[getter]
    fn seeds(&self) -> u32 {
        self.outcome.spec.seeds
    }
    /// Seed of every point's first run.
    #[getter]
    fn base_seed(&self) -> u64 {
        self.outcome.base_seed
    }
    /// The keys `report.md` charts (`peregrine_lab::sweep::report_keys`),
    /// each as `(key, readable name, unit, scale to that unit)`.
    fn report_keys(&self) -> Vec<(String, String, String, f64)> {
        peregrine_lab::sweep::report_keys(&self.aggregate)
            .into_iter()
            .map(|k| {
                let r = peregrine_lab::charts::readable::readable(&k);
                (k, r.name, r.unit.to_string(), r.scale)
            })
            .collect()
    }
}

/// A reproduction's typed summary (JSON text), its output folder and report.
type Reproduced = (String, PathBuf, PathBuf);

/// Run `peregrine reproduce NAME` (any runnable experiment of the registry);
/// `tiny`: seconds-long runs for tests.
// The Python keyword arguments, one by one.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (name, quick=true, seeds=None, out=PathBuf::from("out"), threads=0, progress=true, tiny=false))]
fn reproduce(
    py: Python<'_>,
    name: &str,
    quick: bool,
    seeds: Option<u32>,
    out: PathBuf,
    threads: usize,
    progress: bool,
    tiny: bool,
) -> PyResult<Reproduced> {
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let cancel = Arc::new(AtomicBool::new(false));
    let name = name.to_string();
    let c = counter.clone();
    let mut shown = usize::MAX;
    let work = move || -> anyhow::Result<Reproduced> {
        let c = &*c;
        // The experiment registry runs it (the same table as
        // `peregrine reproduce`; its error names the allowed experiments).
        let options = peregrine_lab::registry::CommonOptions {
            quick,
            seeds,
            out,
            threads,
            tiny,
            command: format!("peregrine.reproduce({name:?})"),
        };
        let o = peregrine_lab::registry::run(&name, &options, c)?;
        Ok((o.summary_json, o.dir, o.report))
    };
    let r = run_interruptible(
        py,
        cancel,
        |py| {
            let done = counter.0.load(Ordering::Relaxed);
            if progress && done != shown {
                shown = done;
                stderr(py, &format!("\rreproduce: {done} runs done"))?;
            }
            Ok(())
        },
        work,
    );
    if progress {
        stderr(py, "\n")?;
    }
    r?.map_err(|e| PyValueError::new_err(format!("{e:#}")))
}

/// The module `peregrine._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScenario>()?;
    m.add_class::<PyResults>()?;
    m.add_class::<PySweepPlan>()?;
    m.add_class::<PySweep>()?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(link_models, m)?)?;
    m.add_function(wrap_pyfunction!(run_document, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    Ok(())
}
