"""The Ray runner of Peregrine's sweeps.

Used two ways, with the same code:

* ``python -m peregrine.ray_sweep``: the backend of
  ``peregrine sim SCENARIO --sweep … --backend ray [--ray-address ADDR]``.
  The command line plans the runs (the very documents its local backend
  runs), writes the plan to this program's stdin as one JSON document and
  reads its events, one JSON object per line, from its stdout; it writes
  ``runs.jsonl``, ``runs.parquet``, ``sweep.csv``… itself, with the same
  code as for local sweeps;
* :func:`run_plan` from Python: ``peregrine.sweep(..., backend="ray")``.

The plan (protocol 1)::

    {"protocol": 1, "address": "HOST:PORT" | null, "num_cpus": N | null,
     "max_retries": 3, "origin": "scenarios/x.toml",
     "files": [{"name": "peregrine-files/0/trace.down", "path": "/abs/trace.down"}, …],
     "runs": [{"job": 0, "label": "flows.0.cc=bbr", "seed": 1, "toml": "…"}, …]}

The events::

    {"event": "ready", "nodes": 2, "cpus": 1.0}
    {"event": "done", "job": 0, "summary": "<the run's summary.json as JSON text>"}
    {"event": "retry", "job": 3, "attempt": 1, "reason": "WorkerCrashedError: …"}
    {"event": "failed", "job": 5, "error": "…"}       (the run failed by itself)
    {"event": "fatal", "error": "…"}                  (then exit status 2)

**No shared filesystem.** The runs' documents name files by bundle names
(``peregrine-files/<k>/<name>``); this driver reads every file once on the
submitting machine and puts its bytes in Ray's object store; each task
receives the bytes, writes them under a temporary folder of its own
worker (once per worker process and file set) and runs the scenario with
that folder as its base directory. A worker never opens a path of the
submitter.

**Faults.** Tasks are submitted with Ray's own retries off
(``max_retries=0``) and retried here, so every retry is seen and
reported: a task whose worker process or node died (any Ray system error:
``WorkerCrashedError``, ``NodeDiedError``, ``ObjectLostError``…) is
submitted again up to ``max_retries`` times (:data:`MAX_RETRIES`, 3); a
task that raised (an invalid document, an engine error) is reported as
``failed`` and not retried, since it would fail again. Ctrl-C (SIGINT)
cancels the tasks in flight and exits with status 130; the events already
written stand.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence

#: Retries of a task whose worker died (the CLI's ``MAX_RETRIES``).
MAX_RETRIES = 3

#: The plan format this runner reads.
PROTOCOL = 1

# Per worker process: the folder holding each file set already written.
_WRITTEN: Dict[str, str] = {}


def _materialize(names: Sequence[str], blobs: Sequence[bytes]) -> str:
    """Write the bundled files into a temporary folder of this worker
    (once per worker process and file set); return the folder."""
    h = hashlib.sha256()
    for name, blob in zip(names, blobs):
        h.update(name.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(blob).digest())
    key = h.hexdigest()
    folder = _WRITTEN.get(key)
    if folder is not None and os.path.isdir(folder):
        return folder
    folder = tempfile.mkdtemp(prefix="peregrine-task-")
    for name, blob in zip(names, blobs):
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(blob)
    _WRITTEN[key] = folder
    return folder


def _run_task(toml_text: str, origin: str, names: List[str], *blobs: bytes) -> str:
    """One run, on a Ray worker: its summary as JSON text."""
    from peregrine import _native

    folder = _materialize(names, blobs) if names else tempfile.gettempdir()
    return _native.run_document(toml_text, folder, origin)


def _is_system_error(e: BaseException) -> bool:
    """A lost worker, node or object (retry), not the task's own error."""
    import ray.exceptions as rex

    if isinstance(e, rex.RayTaskError):
        return False
    return isinstance(e, rex.RayError)


def _task_error(e: BaseException) -> str:
    """A task's own error in one line: the exception Python raised."""
    cause = getattr(e, "cause", None)
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__


def run_plan(
    plan: Dict[str, Any],
    emit: Callable[[Dict[str, Any]], None],
    ray_init: Optional[Dict[str, Any]] = None,
) -> None:
    """Run every run of ``plan`` on Ray, calling ``emit`` with each event
    (see the module docs). Connects to ``plan["address"]`` or starts a
    local Ray with ``plan["num_cpus"]`` CPUs (stopped afterwards) unless
    Ray is already initialized; ``ray_init`` adds keyword arguments to
    ``ray.init``. Returns when every run is done or failed."""
    import ray

    started_here = False
    if not ray.is_initialized():
        kwargs: Dict[str, Any] = {"log_to_driver": False}
        kwargs.update(ray_init or {})
        if plan.get("address"):
            ray.init(address=plan["address"], **kwargs)
        else:
            if plan.get("num_cpus"):
                kwargs["num_cpus"] = int(plan["num_cpus"])
            kwargs.setdefault("include_dashboard", False)
            ray.init(**kwargs)
        started_here = True
    try:
        _run_on_ray(plan, emit)
    finally:
        if started_here:
            ray.shutdown()


def _run_on_ray(plan: Dict[str, Any], emit: Callable[[Dict[str, Any]], None]) -> None:
    import ray

    max_retries = int(plan.get("max_retries", MAX_RETRIES))
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    emit(
        {
            "event": "ready",
            "nodes": len(nodes),
            "cpus": float(ray.cluster_resources().get("CPU", 0.0)),
        }
    )
    names = [f["name"] for f in plan.get("files", [])]
    blobs = []
    for f in plan.get("files", []):
        with open(f["path"], "rb") as fh:
            blobs.append(ray.put(fh.read()))
    task = ray.remote(num_cpus=1, max_retries=0)(_run_task).options(name="peregrine_run")
    origin = plan.get("origin", "<sweep>")
    runs = {r["job"]: r for r in plan["runs"]}
    attempts: Dict[int, int] = {}

    def submit(job: int):
        return task.remote(runs[job]["toml"], origin, names, *blobs)

    pending = {submit(job): job for job in runs}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    summary = ray.get(ref)
                except Exception as e:  # noqa: BLE001 — sorted below
                    if _is_system_error(e):
                        attempts[job] = attempts.get(job, 0) + 1
                        reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                        if attempts[job] <= max_retries:
                            emit(
                                {
                                    "event": "retry",
                                    "job": job,
                                    "attempt": attempts[job],
                                    "reason": reason[:300],
                                }
                            )
                            pending[submit(job)] = job
                        else:
                            emit(
                                {
                                    "event": "failed",
                                    "job": job,
                                    "error": f"its worker was lost {attempts[job]} times "
                                    f"(the limit is {max_retries} retries); last: {reason[:300]}",
                                }
                            )
                    else:
                        emit({"event": "failed", "job": job, "error": _task_error(e)})
                    continue
                emit({"event": "done", "job": job, "summary": summary})
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 — best effort on the way out
                pass
        raise


def main() -> int:
    """``python -m peregrine.ray_sweep``: plan on stdin, events on stdout."""
    out = sys.stdout
    # Only events go to stdout: anything Ray or a library prints goes to
    # stderr, which the command line keeps for its error message.
    sys.stdout = sys.stderr

    def emit(event: Dict[str, Any]) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    try:
        plan = json.load(sys.stdin)
    except ValueError as e:
        emit({"event": "fatal", "error": f"the plan on stdin is not JSON: {e}"})
        return 2
    if plan.get("protocol") != PROTOCOL:
        emit(
            {
                "event": "fatal",
                "error": f"plan protocol {plan.get('protocol')!r}; this runner reads {PROTOCOL} "
                "(the peregrine command and the peregrine-lab package differ in version)",
            }
        )
        return 2
    try:
        import ray  # noqa: F401
    except ImportError:
        emit(
            {
                "event": "fatal",
                "error": f"Ray is not installed in {sys.executable} "
                "(pip install 'peregrine-lab[ray]' or 'ray>=2.9')",
            }
        )
        return 2
    try:
        run_plan(plan, emit)
    except KeyboardInterrupt:
        return 130
    except ConnectionError as e:
        emit({"event": "fatal", "error": f"cannot reach the Ray cluster: {e}"})
        return 2
    except Exception as e:  # noqa: BLE001 — reported to the command line
        emit({"event": "fatal", "error": f"{type(e).__name__}: {e}"})
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
