"""Issue 43's two-node test: ``peregrine sim --sweep --backend ray`` on a
Ray cluster of two nodes on this machine, with no shared filesystem and a
worker killed mid-sweep.

* a Ray head (no CPUs: it runs no task) and a second Ray node (1 CPU),
  started as separate processes with their own temporary folders;
* the second node runs in its own mount namespace where the project
  checkout, the shared folder and the submitter's temporary folder (which
  holds the scenario and its only copy of the traces, one named by a
  relative and one by an absolute path) are hidden under empty tmpfs
  mounts: a task that opened a path of the submitter would fail;
* one Ray worker process running a task is killed (SIGKILL) mid-sweep.

The sweep must complete, report the retry, and write the very bytes the
local backend writes (``sweep.csv``, ``sweep.json``, ``runs.jsonl``,
``runs.parquet``, ``report.md``). Skipped, with a notice, without root,
``unshare``, Ray or the ``peregrine`` binary (``cargo build``;
``PEREGRINE_BIN`` names another), or where Ray cannot start.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _skip(reason: str):
    print(f"skipped: {reason}", file=sys.stderr)
    pytest.skip(reason)


def _binary() -> Path:
    env = os.environ.get("PEREGRINE_BIN")
    candidates = [Path(env)] if env else [REPO / "target/debug/peregrine", REPO / "target/release/peregrine"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    _skip(f"no peregrine binary ({', '.join(map(str, candidates))}); run cargo build")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int):
    """Every process below ``pid`` (from /proc), with its command line."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append((int(d), cmd))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c[0])
    return out


# A 12 Mbit/s downlink and a 6 Mbit/s uplink (Mahimahi: one line per
# 1500-byte delivery opportunity, in ms); a lossy bulk transfer, so seeds
# differ; long enough that a task runs for a while when it is killed.
SCENARIO = """
name = "two-node"
duration = "300s"
seed = 3
[[links]]
name = "cell"
a = "phone"
b = "server"
delay = "20ms"
queue = {{ bdp = 1.0 }}
down = {{ trace = "down.trace", loss = {{ model = "bernoulli", p = 0.01 }} }}
up = {{ trace = "{up}" }}
[[flows]]
src = "server"
dst = "phone"
cc = "cubic"
[[flows.streams]]
app = "bulk"
"""

FILES = ["sweep.csv", "sweep.json", "runs.jsonl", "runs.parquet", "report.md"]


def _netns_up(ns, ip):
    """A network namespace with loopback and one address on one end of a
    veth pair whose both ends stay inside (its default route): nothing in
    it reaches outside."""
    steps = [
        ["ip", "netns", "add", ns],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"],
        ["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "v0"],
        ["ip", "-n", ns, "link", "set", "v0", "up"],
        ["ip", "-n", ns, "link", "set", "v1", "up"],
        ["ip", "-n", ns, "route", "add", "default", "dev", "v0"],
    ]
    for step in steps:
        if subprocess.run(step, capture_output=True).returncode != 0:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            return False
    return True


def test_two_node_sweep_survives_a_killed_worker_without_shared_files(tmp_path):
    if os.geteuid() != 0:
        _skip("needs root for a mount namespace (unshare --mount)")
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        _skip("needs unshare(1) and mount(8)")
    try:
        import ray  # noqa: F401
    except ImportError:
        _skip("Ray is not installed")
    exe = _binary()
    python = Path(sys.executable)
    venv = Path(sys.prefix)

    # The submitter's scenario and traces, only here.
    sub = Path(tempfile.mkdtemp(prefix="peregrine-submitter-"))
    (sub / "down.trace").write_text("".join(f"{ms}\n" for ms in range(1, 1001)))
    (sub / "up.trace").write_text("".join(f"{ms}\n" for ms in range(2, 1001, 2)))
    scenario = sub / "two-node.toml"
    scenario.write_text(SCENARIO.format(up=sub / "up.trace"))
    grid = ["--sweep", "flows.0.cc=cubic,bbr", "--seeds", "2", "-q"]

    local = tmp_path / "local"
    r = subprocess.run(
        [exe, "sim", scenario, *grid, "--threads", "1", "--out", local],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr

    port = _free_port()
    head_tmp = tempfile.mkdtemp(prefix="peregrine-ray-head-")
    node_tmp = tempfile.mkdtemp(prefix="peregrine-ray-node-")
    node_venv = Path(node_tmp) / "venv"
    node_venv.mkdir()
    # The cluster lives in a network namespace of its own: Ray registers a
    # node under the address of its default route, so the namespace has
    # one address (on a veth pair that leads nowhere) and every
    # Ray connection stays inside it, never on the machine's own address.
    # RAY_AUTH_MODE=disabled: a Ray started where ~/.ray/auth_token exists
    # would otherwise require a token the other processes may not use.
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    ray_cli = [str(python), "-m", "ray.scripts.scripts", "start"]
    small = ["--object-store-memory", str(80 * 1024 * 1024), "--block"]
    procs = []
    ns, ns_ip = f"peregrine-ray-{os.getpid()}", "10.251.0.1"
    if shutil.which("ip") is None or not _netns_up(ns, ns_ip):
        _skip("needs iproute2 and network namespaces (ip netns add)")
    in_ns = ["ip", "netns", "exec", ns]
    try:
        head = subprocess.Popen(
            [*in_ns, *ray_cli, "--head", "--node-ip-address", ns_ip, "--port", str(port), "--num-cpus", "0",
             "--temp-dir", head_tmp, "--include-dashboard=false", *small],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        procs.append(head)
        # The second node: the venv moved out of the checkout by a bind
        # mount, then the checkout, the shared folder and the submitter's
        # folder hidden.
        hide = [REPO, REPO.parent / "shared", sub]
        script = f"mount --bind {venv} {node_venv} && " + " && ".join(
            f"mount -t tmpfs -o size=1m none {h}" for h in hide if h.exists()
        ) + (
            f" && cd {node_tmp} && exec {node_venv}/bin/python -m ray.scripts.scripts start"
            f" --address {ns_ip}:{port} --node-ip-address {ns_ip} --num-cpus 1 --temp-dir {node_tmp}/ray"
            f" {' '.join(small)}"
        )
        node = subprocess.Popen(
            [*in_ns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        procs.append(node)
        time.sleep(5)
        for p, name in [(head, "head"), (node, "second node")]:
            if p.poll() is not None:
                _skip(f"the Ray {name} did not start: {p.stdout.read().decode(errors='replace')[-800:]}")

        out = tmp_path / "ray"
        sweep = subprocess.Popen(
            [*in_ns, exe, "sim", scenario, *grid, "--out", out, "--backend", "ray",
             "--ray-address", f"{ns_ip}:{port}", "--python", python],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        # Kill one Ray worker while it runs a task: the sweep must retry it.
        killed = None
        deadline = time.time() + 150
        seen = {}
        while killed is None and sweep.poll() is None and time.time() < deadline:
            for pid, cmd in _descendants(node.pid):
                if "peregrine_run" in cmd or "_run_task" in cmd:
                    first = seen.setdefault(pid, time.time())
                    if time.time() - first > 0.5:
                        os.kill(pid, signal.SIGKILL)
                        killed = pid
                        break
            time.sleep(0.1)
        try:
            stdout, stderr = sweep.communicate(timeout=max(10, deadline - time.time()))
        except subprocess.TimeoutExpired:
            sweep.kill()
            stdout, stderr = sweep.communicate()
            pytest.fail(f"the sweep did not finish: {stderr[-2000:]}")
        assert killed is not None, f"no running task was seen to kill: {stderr[-2000:]}"
        assert sweep.returncode == 0, stderr[-3000:]
        assert "lost its worker" in stderr, stderr[-3000:]
        assert "retried after their worker was lost" in stdout, stdout
        assert "4 runs (ray backend)" in stdout, stdout
        for f in FILES:
            assert (out / f).read_bytes() == (local / f).read_bytes(), f"{f} differs from local"
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(sub, ignore_errors=True)
        shutil.rmtree(head_tmp, ignore_errors=True)
        shutil.rmtree(node_tmp, ignore_errors=True)
