"""Peregrine from Python: scenarios, runs, sweeps and results as DataFrames.

The simulator and laboratory are Rust (`peregrine-sim`, `peregrine-lab`);
this package is a thin layer over them, so a run here gives the numbers
``peregrine sim`` gives, and a sweep the statistics ``peregrine sim --sweep``
writes.

>>> import peregrine
>>> s = peregrine.Scenario.from_file("scenarios/dumbbell.toml", set={"duration": "5s"})
>>> r = s.run()
>>> r.summary["flows"][0]["goodput_bps"]                     # doctest: +SKIP
>>> r.flows                                                  # a pandas DataFrame
>>> sw = peregrine.sweep(s, grid={"flows.0.cc": ["cubic", "bbr"]}, seeds=5)
>>> sw.aggregate()                                           # mean, std, 95 % CI per point

Tables are built column by column through Arrow (``pyarrow``) and handed
to pandas; the simulation runs with the GIL released, and Ctrl-C stops a
sweep (no new run starts; the call raises ``KeyboardInterrupt``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _native, figures, ray_sweep
from ._native import ScenarioError

__all__ = [
    "Scenario",
    "Results",
    "Sweep",
    "Reproduction",
    "ScenarioError",
    "sweep",
    "reproduce",
    "controllers",
    "schedulers",
    "experiments",
    "link_models",
]

PathLike = Union[str, Path]


def controllers() -> List[str]:
    """The registered congestion-controller names (a flow's ``cc``), as ``peregrine cc list``."""
    return list(_native.controllers())


def schedulers() -> List[str]:
    """The stream-scheduler names a flow's ``scheduler`` accepts."""
    return list(_native.schedulers())


def experiments() -> List[str]:
    """The experiment names ``reproduce`` accepts (the laboratory's experiment registry)."""
    return list(_native.experiments())


def link_models() -> List[str]:
    """The link-model names (``point_to_point``, ``mahimahi``, …), from the
    simulator's link-model registry; docs/scenarios.md says how a scenario
    selects each."""
    return list(_native.link_models())


def _csv_frame(text: str):
    """A CSV text (the CLI's format) as a DataFrame through Arrow's CSV reader."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # An Arrow buffer, not a Python file object: see `Sweep.runs`.
    table = pacsv.read_csv(pa.BufferReader(text.encode()))
    return table.to_pandas()


class Scenario:
    """A validated scenario (the TOML document with overrides applied).

    Build it with :meth:`from_file`, :meth:`from_dict` or :meth:`from_toml`;
    an invalid document raises :class:`ScenarioError`, whose ``field`` is
    the dotted path of the bad field (``flows.0.cc``).
    """

    __slots__ = ("_native",)

    def __init__(self, native: "_native.Scenario"):
        self._native = native

    @staticmethod
    def from_file(path: PathLike, set: Optional[Mapping[str, Any]] = None) -> "Scenario":
        """Read a scenario file; ``set`` maps dotted keys to values
        (``{"flows.0.cc": "bbr", "duration": "10s"}``), as ``--set``.
        Relative paths inside (traces) resolve against the file's folder."""
        return Scenario(_native.Scenario.from_file(str(path), dict(set) if set else None))

    @staticmethod
    def from_dict(
        doc: Mapping[str, Any],
        set: Optional[Mapping[str, Any]] = None,
        base_dir: Optional[PathLike] = None,
    ) -> "Scenario":
        """A scenario from a dict shaped like the TOML file
        (``{"duration": "10s", "links": [...], "flows": [...]}``)."""
        return Scenario(
            _native.Scenario.from_dict(
                dict(doc), dict(set) if set else None, str(base_dir) if base_dir else None
            )
        )

    @staticmethod
    def from_toml(
        text: str,
        set: Optional[Mapping[str, Any]] = None,
        base_dir: Optional[PathLike] = None,
    ) -> "Scenario":
        """A scenario from TOML text."""
        return Scenario(
            _native.Scenario.from_toml(
                text, dict(set) if set else None, str(base_dir) if base_dir else None
            )
        )

    def with_set(self, set: Mapping[str, Any]) -> "Scenario":
        """A copy with more overrides (dotted key → value)."""
        return Scenario(self._native.with_set(dict(set)))

    def to_toml(self) -> str:
        """The document as TOML text (``Scenario.from_toml`` reads it back)."""
        return self._native.to_toml()

    def to_dict(self) -> Dict[str, Any]:
        """The document as a dict."""
        return self._native.to_dict()

    @property
    def name(self) -> str:
        """The scenario's name (its ``name`` field, else from its origin)."""
        return self._native.name

    @property
    def origin(self) -> str:
        """The file path, ``<dict>`` or ``<toml>``."""
        return self._native.origin

    def run(self, progress: bool = True) -> "Results":
        """Simulate once, with the GIL released; ``progress`` writes a line
        to stderr. Same numbers as ``peregrine sim`` on the same document."""
        return Results(self._native.run(progress))

    def __repr__(self) -> str:
        return f"Scenario(name={self.name!r}, origin={self.origin!r})"


class Results:
    """One run's results: ``summary`` (the ``summary.json`` dict) and the
    CLI's CSV tables as pandas DataFrames (``flows``, ``links``,
    ``messages``, ``timeseries``, ``stream_timeseries``, ``link_timeseries``)
    with the CSV files' columns. Each table is built on first access."""

    def __init__(self, native: "_native.Results"):
        self._native = native
        self._cache: Dict[str, Any] = {}

    def _get(self, name: str, build):
        if name not in self._cache:
            self._cache[name] = build()
        return self._cache[name]

    @property
    def summary(self) -> Dict[str, Any]:
        """``summary.json`` as a dict (same keys, order and values)."""
        return self._get("summary", lambda: json.loads(self._native.summary_json()))

    @property
    def events(self) -> int:
        """Simulated events processed."""
        return self._native.events

    @property
    def flows(self):
        """One row per flow (``flows.csv``): goodput, delay quantiles, drops…"""
        return self._get("flows", lambda: _csv_frame(self._native.flows_csv()))

    @property
    def links(self):
        """One row per link direction (``links.csv``)."""
        return self._get("links", lambda: _csv_frame(self._native.links_csv()))

    @property
    def timeseries(self):
        """Per flow per sampling interval (``timeseries.csv``): rates, cwnd, RTT…"""
        return self._get("timeseries", lambda: _csv_frame(self._native.timeseries_csv()))

    @property
    def stream_timeseries(self):
        """Per stream per interval (``stream_timeseries.csv``)."""
        return self._get(
            "stream_timeseries", lambda: _csv_frame(self._native.stream_timeseries_csv())
        )

    @property
    def link_timeseries(self):
        """Per link direction per interval (``link_timeseries.csv``)."""
        return self._get(
            "link_timeseries", lambda: _csv_frame(self._native.link_timeseries_csv())
        )

    @property
    def messages(self):
        """One row per delivered message (``messages.csv``'s columns: flow,
        stream, message, queued_s, latency_ms, bytes), built from the typed
        records' raw column buffers (exact, not rounded as the CSV is)."""
        return self._get("messages", self._messages)

    def _messages(self):
        import pyarrow as pa
        import pyarrow.compute as pc

        names, flow, stream, number, queued_ns, latency_ns, size = self._native.message_columns()
        n = len(flow) // 8

        def ints(buf: bytes):
            return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buf)])

        table = pa.table(
            {
                "flow": pa.array(names, pa.string()).take(ints(flow)),
                "stream": ints(stream),
                "message": ints(number),
                "queued_s": pc.divide(pc.cast(ints(queued_ns), pa.float64()), 1e9),
                "latency_ms": pc.divide(pc.cast(ints(latency_ns), pa.float64()), 1e6),
                "bytes": ints(size),
            }
        )
        return table.to_pandas()

    def table(self) -> str:
        """The readable table ``peregrine sim`` prints."""
        return self._native.table()

    def figures(self, size: str = "two-column") -> Dict[str, Any]:
        """The charts ``peregrine sim`` draws into ``plots/`` as matplotlib
        figures: ``throughput``, ``cwnd``, ``rtt``, ``latency_cdf``;
        ``size`` is ``"two-column"`` (7 in wide) or ``"one-column"`` (3.5 in).
        Save with ``fig.savefig`` or :func:`peregrine.figures.save`."""
        from .figures import run_figures

        return run_figures(self, size)

    def write(self, out_dir: PathLike) -> Path:
        """Write ``summary.json`` and the CSVs, as ``peregrine sim --out DIR``."""
        self._native.write(str(out_dir))
        return Path(out_dir)

    def __repr__(self) -> str:
        return f"Results(name={self.summary.get('name')!r}, events={self.events})"


class Sweep:
    """A finished sweep: ``runs`` (one row per grid point × seed) and
    ``aggregate()`` (mean, std, 95 % CI per point and numeric field, as
    ``peregrine sim --sweep`` writes to ``sweep.csv``)."""

    def __init__(self, native: "_native.Sweep", backend: str, wall_s: float):
        self._native = native
        self.backend = backend
        """``"local"`` or ``"ray"``."""
        self.wall_s = wall_s
        """Wall time of the runs, seconds."""
        self._runs = None

    @property
    def runs(self):
        """A DataFrame: ``point`` (grid-point index), ``seed``, one column per
        grid key, then every numeric summary field named by its JSON pointer
        (``/flows/0/goodput_bps``; NaN where a run lacks it). The same table
        as ``runs.parquet``."""
        if self._runs is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            # An Arrow buffer, not io.BytesIO: Arrow wraps a Python file
            # object in a reader whose destructor takes the GIL, and when
            # its last reference went on an Arrow thread at interpreter
            # exit, the process aborted ("terminate called without an
            # active exception", pyarrow 26, 2 runs in 20 of
            # examples/python/compare_controllers.py).
            self._runs = pq.read_table(pa.BufferReader(self._native.runs_parquet())).to_pandas()
        return self._runs

    @property
    def labels(self) -> List[str]:
        """Point labels (``flows.0.cc=bbr``) by point index."""
        return list(self._native.labels())

    @property
    def grid(self) -> Dict[str, List[Any]]:
        """The grid swept, key → values, in order (the first key varies slowest)."""
        return dict(self._native.grid())

    @property
    def seeds(self) -> int:
        """Runs per point."""
        return self._native.seeds

    @property
    def base_seed(self) -> int:
        """Seed of every point's first run (seeds are base_seed … base_seed + seeds − 1)."""
        return self._native.base_seed

    @property
    def summaries(self) -> List[Dict[str, Any]]:
        """Every run's ``summary.json`` dict, in (point, seed) order."""
        return [json.loads(s) for s in self._native.summaries()]

    def aggregate(self):
        """Per point and numeric field: ``point`` (label), ``key``, ``n``,
        ``mean``, ``ci95`` (half-width of the Student-t 95 % interval),
        ``std``, ``min``, ``median``, ``max`` — ``sweep.csv``'s rows, computed
        by the same Rust code as ``peregrine sim --sweep``."""
        return _csv_frame(self._native.aggregate_csv())

    def figures(self, size: str = "two-column") -> Dict[str, Any]:
        """The bar charts of ``report.md`` as matplotlib figures, keyed by
        JSON pointer (``/flows/0/goodput_bps``): mean ± 95 % CI per grid
        point in the key's readable unit; ``size`` as for
        :meth:`Results.figures`."""
        from .figures import sweep_figures

        return sweep_figures(self, size)

    def write_parquet(self, path: PathLike) -> Path:
        """Write the runs table as Parquet (as ``runs.parquet``)."""
        Path(path).write_bytes(self._native.runs_parquet())
        return Path(path)

    def __repr__(self) -> str:
        return (
            f"Sweep(points={len(self.labels)}, seeds={self.seeds}, backend={self.backend!r}, "
            f"wall_s={self.wall_s:.2f})"
        )


def _sweep_ray(plan, ray_address: Optional[str], progress: bool, ray_cpus: int):
    """Every run on Ray through :mod:`peregrine.ray_sweep` (the runner of
    ``peregrine sim --sweep --backend ray``): the scenario's files travel
    with the tasks, a task whose worker dies is retried (at most
    ``ray_sweep.MAX_RETRIES`` times, each retry reported on stderr)."""
    from . import ray_sweep

    doc = json.loads(plan.ray_plan(ray_address, ray_cpus if not ray_address else None))
    total = len(doc["runs"])
    summaries: Dict[int, str] = {}
    failures: Dict[int, str] = {}
    labels = {r["job"]: (r["label"], r["seed"]) for r in doc["runs"]}

    def emit(event: Dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "done":
            summaries[event["job"]] = event["summary"]
            if progress:
                sys.stderr.write(f"\rsweep (ray) {len(summaries)}/{total}")
                sys.stderr.flush()
        elif kind == "failed":
            failures[event["job"]] = event["error"]
        elif kind == "retry":
            label, seed = labels[event["job"]]
            sys.stderr.write(
                f"\nwarning: run of sweep point `{label}` with seed {seed} lost its worker "
                f"({event['reason']}); retry {event['attempt']} of {doc['max_retries']}\n"
            )

    try:
        ray_sweep.run_plan(doc, emit)
    finally:
        if progress:
            sys.stderr.write("\n")
    if failures:
        job = min(failures)
        label, seed = labels[job]
        raise RuntimeError(
            f"run of sweep point `{label}` with seed {seed} failed "
            f"({len(failures)} of {total} runs failed): {failures[job]}"
        )
    return plan.collect([summaries[j] for j in sorted(summaries)])


def sweep(
    scenario: Scenario,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    seeds: Optional[int] = 10,
    backend: str = "local",
    ray_address: Optional[str] = None,
    progress: bool = True,
    threads: int = 0,
    ray_cpus: int = 2,
) -> Sweep:
    """Run ``scenario`` at every grid point × seed and aggregate.

    ``grid`` maps dotted keys to lists of values (``{"flows.0.cc": ["cubic",
    "bbr"]}``), laid over the scenario's own ``[sweep.grid]``; the first key
    varies slowest. Runs of a point use seeds ``seed``, ``seed+1``, … (the
    scenario's ``seed``, default 1); ``seeds=None`` takes the scenario's
    ``[sweep] seeds``.

    ``backend="local"`` runs on this machine's cores (``threads``, 0: all);
    ``backend="ray"`` submits one Ray task per (point, seed) to the cluster
    at ``ray_address`` or to a local one started with ``ray_cpus`` CPUs (and
    shut down afterwards), through :mod:`peregrine.ray_sweep`: every file
    the scenario names (traces) travels with the tasks through Ray's
    object store, and a task whose worker dies is retried (at most
    ``peregrine.ray_sweep.MAX_RETRIES`` = 3 times). Both backends give
    identical numbers. Ctrl-C stops the sweep and raises
    ``KeyboardInterrupt``.
    """
    plan = _native.SweepPlan(scenario._native, dict(grid or {}), seeds)
    start = time.perf_counter()
    if backend == "local":
        native = plan.run_local(threads, progress)
    elif backend == "ray":
        native = _sweep_ray(plan, ray_address, progress, ray_cpus)
    else:
        raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")
    return Sweep(native, backend, time.perf_counter() - start)


class Reproduction:
    """A seed paper's reproduction: ``summary`` (its typed ``summary.json``
    as a dict), ``dir`` (the output folder) and ``report`` (``report.md``)."""

    def __init__(self, name: str, summary: Dict[str, Any], dir: Path, report: Path):
        self.name = name
        self.summary = summary
        self.dir = dir
        self.report = report

    def __repr__(self) -> str:
        return f"Reproduction({self.name!r}, report={str(self.report)!r})"


def reproduce(
    name: str,
    quick: bool = True,
    seeds: Optional[int] = None,
    out: PathLike = "out",
    threads: int = 0,
    progress: bool = True,
    tiny: bool = False,
) -> Reproduction:
    """Run ``peregrine reproduce NAME`` (one of ``experiments()``: ``"fanet"``,
    ``"quic-sched"``, ``"mmwave-cvn"``, ``"aqm"``) into ``out/NAME/``; ``quick`` is ``--quick``,
    ``seeds`` the runs per case (fanet, mmwave-cvn, aqm); ``tiny`` shrinks every run to
    seconds (tests, smoke checks: the numbers mean little). Ctrl-C stops it."""
    text, folder, report = _native.reproduce(name, quick, seeds, str(out), threads, progress, tiny)
    return Reproduction(name, json.loads(text), Path(folder), Path(report))
