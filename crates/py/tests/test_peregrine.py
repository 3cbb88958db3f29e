"""The Python API against the Rust results it wraps (values, not types)."""

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import peregrine
from peregrine import Scenario, ScenarioError

SHORT = {"duration": "5s", "links.1.loss.p": 0.01}


def test_controllers_and_schedulers():
    cc = peregrine.controllers()
    assert "cubic" in cc and "bbr" in cc and len(cc) == len(set(cc)) >= 13
    assert peregrine.schedulers() == ["rr", "wfq", "abs", "adaptive", "edf", "aging"]
    assert peregrine.experiments() == ["fanet", "quic-sched", "mmwave-cvn", "aqm"]
    assert peregrine.link_models() == ["point_to_point", "mahimahi", "wifi", "mmwave"]


def test_every_listed_controller_and_scheduler_is_accepted(dumbbell):
    for cc in peregrine.controllers():
        assert Scenario.from_file(dumbbell, set={"flows.0.cc": cc}).to_dict()["flows"][0]["cc"] == cc
    extra = {"adaptive": {"flows.0.target_rate": "1Mbps"}, "aging": {"flows.0.aging_bound": "50ms"}}
    for s in peregrine.schedulers():
        sc = Scenario.from_file(dumbbell, set={"flows.0.scheduler": s, **extra.get(s, {})})
        assert sc.to_dict()["flows"][0]["scheduler"] == s


def test_from_file_set_and_toml_round_trip(dumbbell):
    s = Scenario.from_file(dumbbell, set={"flows.0.cc": "bbr", "duration": "3s"})
    assert s.name == "dumbbell"
    d = s.to_dict()
    assert d["flows"][0]["cc"] == "bbr" and d["duration"] == "3s"
    again = Scenario.from_toml(s.to_toml())
    assert again.to_dict() == d
    from_dict = Scenario.from_dict(d)
    assert from_dict.to_toml() == s.to_toml()


def test_bad_scenario_names_the_field(dumbbell):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_file(dumbbell, set={"flows.0.cc": "nosuchcc"})
    assert e.value.field == "flows.0.cc"
    assert "nosuchcc" in str(e.value) and "cubic" in str(e.value)
    assert isinstance(e.value, ValueError) and type(e.value).__name__ == "ScenarioError"
    assert e.value.origin == str(dumbbell)
    d = Scenario.from_file(dumbbell).to_dict()
    d["links"][1]["rate"] = "fast"
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(d)
    assert e.value.field.startswith("links.1.rate"), e.value.field
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml("duration = [")
    assert e.value.field == "line 1"
    with pytest.raises(ScenarioError) as e:
        peregrine.sweep(Scenario.from_file(dumbbell), grid={"flows.0.cc": ["cubic", "nope"]}, seeds=1)
    assert e.value.field == "flows.0.cc"


def test_ack_policy_reaches_the_run_and_bad_values_name_the_field(dumbbell):
    def reverse_per_forward(policy):
        r = Scenario.from_file(dumbbell, set={"duration": "5s", "flows.0.ack_policy": policy}).run(progress=False)
        links = r.links.set_index("link")
        return links.loc["bottleneck/down", "delivered_packets"] / links.loc["bottleneck/up", "delivered_packets"]

    tcp, sltp = reverse_per_forward("tcp"), reverse_per_forward("sltp")
    assert 0.45 < tcp < 0.6, tcp
    assert sltp < tcp / 3, (sltp, tcp)
    s = Scenario.from_file(dumbbell, set={"flows.0.ack_policy": "tcp", "flows.0.delayed_ack": "20ms"})
    assert s.to_dict()["flows"][0]["ack_policy"] == "tcp"
    for bad, field in [
        ({"flows.0.ack_policy": "quic"}, "flows.0.ack_policy"),
        ({"flows.0.ack_policy": "tcp", "flows.0.delayed_ack": "0ms"}, "flows.0.delayed_ack"),
        ({"flows.0.delayed_ack": "40ms"}, "flows.0.delayed_ack"),
    ]:
        with pytest.raises(ScenarioError) as e:
            Scenario.from_file(dumbbell, set=bad)
        assert e.value.field == field, (bad, e.value.field)


def test_run_matches_summary_json_and_csvs(dumbbell, tmp_path):
    s = Scenario.from_file(dumbbell, set=SHORT)
    r = s.run(progress=False)
    r.write(tmp_path)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert r.summary == on_disk
    f = on_disk["flows"][0]
    assert 1e6 < f["goodput_bps"] < 5e6, "below the 5 Mbit/s bottleneck, 1 % loss"
    # DataFrames agree with summary.json and with the CSV files.
    flows = r.flows
    assert list(flows["flow"]) == ["bulk"]
    assert flows.loc[0, "cc"] == "cubic"
    assert flows.loc[0, "goodput_bps"] == pytest.approx(f["goodput_bps"], rel=1e-6)
    assert flows.loc[0, "tx_packets"] == f["tx_packets"]
    pd.testing.assert_frame_equal(flows, pd.read_csv(tmp_path / "flows.csv"), check_dtype=False)
    pd.testing.assert_frame_equal(r.links, pd.read_csv(tmp_path / "links.csv"), check_dtype=False)
    ts = r.timeseries
    pd.testing.assert_frame_equal(ts, pd.read_csv(tmp_path / "timeseries.csv"), check_dtype=False)
    assert len(ts) == 5, "one row per 1 s interval over 5 s"
    assert r.events > 1000


MESSAGES = {
    "name": "cbr-beside-bulk",
    "duration": "3s",
    "seed": 1,
    "links": [{"name": "radio", "a": "uav", "b": "gcs", "rate": "1Mbps", "delay": "20ms", "queue": {"bdp": 1.0}}],
    "flows": [
        {
            "name": "uav",
            "src": "uav",
            "dst": "gcs",
            "cc": "cubic",
            "scheduler": "abs",
            "streams": [
                {"id": 0, "app": "cbr", "rate": "100kbps", "message_bytes": 250, "priority": 0},
                {"id": 1, "app": "bulk", "priority": 2},
            ],
        }
    ],
}


def test_messages_frame_matches_messages_csv(tmp_path):
    s = Scenario.from_dict(MESSAGES)
    assert s.name == "cbr-beside-bulk"
    r = s.run(progress=False)
    r.write(tmp_path)
    m = r.messages
    csv = pd.read_csv(tmp_path / "messages.csv")
    assert len(m) == len(csv) > 100
    assert list(m.columns) == list(csv.columns)
    assert (m["flow"] == csv["flow"]).all() and (m["message"] == csv["message"]).all()
    assert (m["stream"] == csv["stream"]).all() and (m["bytes"] == csv["bytes"]).all()
    assert (m["latency_ms"] - csv["latency_ms"]).abs().max() < 1e-6
    # 100 kbit/s of 250-byte messages: 50 per second on stream 0, all 250 bytes.
    cbr = m[m.stream == 0]
    assert (cbr["bytes"] == 250).all() and 140 <= len(cbr) <= 150
    assert cbr["latency_ms"].min() >= 20.0, "at least the one-way delay"


def test_run_releases_the_gil(dumbbell):
    s = Scenario.from_file(dumbbell, set={"duration": "30s"})
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = time.perf_counter()
    s.run(progress=False)
    wall = time.perf_counter() - start
    stop.set()
    t.join()
    # With the GIL held for the whole run the counter could not tick.
    assert wall < 0.05 or len(ticks) > 10, (wall, len(ticks))


GRID = {"flows.0.cc": ["cubic", "bbr"], "links.1.rate": ["5Mbps", "10Mbps"]}


def test_sweep_runs_and_aggregate(dumbbell, tmp_path):
    s = Scenario.from_file(dumbbell, set=SHORT)
    sw = peregrine.sweep(s, grid=GRID, seeds=3, progress=False)
    runs = sw.runs
    assert len(runs) == 12
    assert list(runs.columns[:4]) == ["point", "seed", "flows.0.cc", "links.1.rate"]
    assert list(runs["point"]) == [p for p in range(4) for _ in range(3)]
    assert list(runs["seed"]) == [1, 2, 3] * 4
    assert list(runs["flows.0.cc"][::3]) == ["cubic", "cubic", "bbr", "bbr"]
    assert "/flows/0/goodput_bps" in runs.columns
    # Each row is that run's own summary, and equals a single run.
    one = s.with_set({"flows.0.cc": "bbr", "links.1.rate": "10Mbps", "seed": 2}).run(progress=False)
    row = runs[(runs.point == 3) & (runs.seed == 2)].iloc[0]
    assert row["/flows/0/goodput_bps"] == one.summary["flows"][0]["goodput_bps"]
    assert sw.summaries[3 * 3 + 1] == one.summary
    # aggregate(): the sweep.csv statistics of the runs.
    agg = sw.aggregate()
    assert list(agg.columns) == ["point", "key", "n", "mean", "ci95", "std", "min", "median", "max"]
    g = agg[(agg.point == "flows.0.cc=bbr,links.1.rate=10Mbps") & (agg.key == "/flows/0/goodput_bps")].iloc[0]
    vals = runs[runs.point == 3]["/flows/0/goodput_bps"]
    assert g["n"] == 3
    assert g["mean"] == pytest.approx(vals.mean(), rel=1e-8)
    assert g["std"] == pytest.approx(vals.std(ddof=1), rel=1e-8)
    assert g["ci95"] == pytest.approx(4.302652730 * vals.std(ddof=1) / math.sqrt(3), rel=1e-6)
    # Every point's mean goodput is below its bottleneck rate.
    goodput = agg[agg.key == "/flows/0/goodput_bps"].set_index("point")["mean"]
    for point, g in goodput.items():
        rate = 10e6 if point.endswith("10Mbps") else 5e6
        assert 0.1 * rate < g < rate, (point, g)
    # The runs table round-trips through Parquet.
    p = sw.write_parquet(tmp_path / "runs.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(p), runs)


def test_cli_sweep_writes_the_same_parquet(dumbbell, tmp_path, root):
    exe = root / "target" / "release" / "peregrine"
    if not exe.exists():
        exe = root / "target" / "debug" / "peregrine"
    if not exe.exists():
        pytest.skip("no peregrine binary built")
    s = Scenario.from_file(dumbbell, set=SHORT)
    sw = peregrine.sweep(s, grid={"flows.0.cc": ["cubic", "bbr"]}, seeds=2, progress=False)
    out = tmp_path / "cli"
    sets = [a for k, v in SHORT.items() for a in ("--set", f"{k}={v}")]
    subprocess.run(
        [str(exe), "sim", str(dumbbell), *sets, "--sweep", "flows.0.cc=cubic,bbr", "--seeds", "2", "--quiet", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    pd.testing.assert_frame_equal(pd.read_parquet(out / "runs.parquet"), sw.runs)
    pd.testing.assert_frame_equal(pd.read_csv(out / "sweep.csv"), sw.aggregate())


def test_ray_backend_equals_local(dumbbell):
    pytest.importorskip("ray")
    s = Scenario.from_file(dumbbell, set=SHORT)
    local = peregrine.sweep(s, grid=GRID, seeds=2, progress=False)
    ray = peregrine.sweep(s, grid=GRID, seeds=2, backend="ray", ray_cpus=2, progress=False)
    assert ray.backend == "ray"
    assert ray.summaries == local.summaries  # every field of every run
    pd.testing.assert_frame_equal(ray.runs, local.runs, check_exact=True)
    pd.testing.assert_frame_equal(ray.aggregate(), local.aggregate(), check_exact=True)


INTERRUPT = r"""
import os, signal, sys, threading, time
import peregrine
s = peregrine.Scenario.from_file(sys.argv[1], set={"duration": "60s", "links.1.loss.p": 0.01})
# Python leaves SIGINT alone when it starts with SIGINT ignored (a shell
# does that to background jobs, e.g. a CI script started with `&`): make
# Ctrl-C raise KeyboardInterrupt here whatever the parent did.
signal.signal(signal.SIGINT, signal.default_int_handler)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.perf_counter()
try:
    peregrine.sweep(s, grid={"flows.0.cc": peregrine.controllers()}, seeds=20, threads=2, progress=False)
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted {time.perf_counter() - start:.2f}")
"""


def test_keyboard_interrupt_stops_a_sweep(dumbbell):
    # 16 controllers × 20 seeds × 60 s would take minutes; Ctrl-C after 1 s
    # must end the call within the runs in flight.
    out = subprocess.run(
        [sys.executable, "-c", INTERRUPT, str(dumbbell)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("interrupted"), (out.stdout, out.stderr)
    word, secs = out.stdout.split()
    assert word == "interrupted"
    assert float(secs) < 30, secs


@pytest.mark.parametrize("name", ["quic-sched", "fanet", "mmwave-cvn", "aqm"])
def test_reproduce_returns_the_typed_summary(name, tmp_path):
    r = peregrine.reproduce(name, quick=True, seeds=1, out=tmp_path, tiny=True, progress=False)
    assert r.report.exists() and r.report.name == "report.md"
    assert r.dir == tmp_path / name
    on_disk = json.loads((r.dir / "summary.json").read_text())
    assert r.summary == on_disk and len(r.summary) > 0


def test_reproduce_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown reproduction"):
        peregrine.reproduce("nope", progress=False)


TRACE_SCENARIO = """
name = "traced"
seed = 1
duration = "3s"
[[links]]
a = "phone"
b = "server"
delay = "20ms"
queue = { bdp = 1.0 }
down = { trace = "down.trace" }
up = { trace = "down.trace" }
[[flows]]
src = "server"
dst = "phone"
[[flows.streams]]
app = "bulk"
"""


def test_ray_plan_ships_the_files_a_scenario_names(tmp_path):
    (tmp_path / "down.trace").write_text("".join(f"{ms}\n" for ms in range(1, 101)))
    s = Scenario.from_toml(TRACE_SCENARIO, base_dir=tmp_path)
    plan = peregrine._native.SweepPlan(s._native, {"flows.0.cc": ["cubic", "bbr"]}, 2)
    doc = json.loads(plan.ray_plan())
    assert doc["protocol"] == 1 and doc["max_retries"] == 3
    # One file, named once, read from the submitter's path by the driver only.
    assert doc["files"] == [
        {"name": "peregrine-files/0/down.trace", "path": str((tmp_path / "down.trace").resolve())}
    ]
    assert [r["job"] for r in doc["runs"]] == [0, 1, 2, 3]
    for r in doc["runs"]:
        assert 'trace = "peregrine-files/0/down.trace"' in r["toml"], r["toml"]
        assert str(tmp_path) not in r["toml"]
    # A task, run here by hand: the bytes in a folder of its own.
    from peregrine import ray_sweep

    data = (tmp_path / "down.trace").read_bytes()
    text = ray_sweep._run_task(doc["runs"][1]["toml"], "<t>", ["peregrine-files/0/down.trace"], data)
    local = peregrine.sweep(s, grid={"flows.0.cc": ["cubic", "bbr"]}, seeds=2, progress=False)
    assert json.loads(text) == local.summaries[1]


def test_figures_of_a_run_and_a_sweep(dumbbell, tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    s = Scenario.from_file(dumbbell, set=SHORT)
    figs = s.run(progress=False).figures()
    assert list(figs) == ["throughput", "cwnd", "rtt", "latency_cdf"]
    assert all(isinstance(f, Figure) for f in figs.values())
    ax = figs["throughput"].axes[0]
    assert ax.get_ylabel() == "throughput (Mbit/s)" and ax.get_xlabel() == "time (s)"
    assert len(ax.lines) == len(s.run(progress=False).flows)
    assert tuple(figs["cwnd"].get_size_inches()) == (7.0, 4.2)
    sw = peregrine.sweep(s, grid={"flows.0.cc": ["cubic", "bbr"]}, seeds=2, progress=False)
    bars = sw.figures(size="one-column")
    assert "/flows/0/goodput_bps" in bars
    g = bars["/flows/0/goodput_bps"]
    assert tuple(g.get_size_inches()) == (3.5, 2.45)
    heights = [p.get_height() for p in g.axes[0].patches]
    agg = sw.aggregate()
    means = agg[agg.key == "/flows/0/goodput_bps"]["mean"] / 1e6
    assert heights == pytest.approx(list(means))
    written = peregrine.figures.save(bars, tmp_path, ("pdf", "png"))
    pdf = tmp_path / "flows_0_goodput_bps.pdf"
    assert pdf in written and pdf.read_bytes().startswith(b"%PDF")
    assert b"FontFile2" in pdf.read_bytes()  # TrueType embedded
    with pytest.raises(ValueError, match="jpg"):
        peregrine.figures.save(bars, tmp_path, ("jpg",))
