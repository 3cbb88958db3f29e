"""A sweep on Ray (one task per grid point × seed), checked against the
local backend and timed.

    python examples/python/ray_sweep.py                    # a local 2-CPU Ray cluster
    python examples/python/ray_sweep.py --address auto     # a running cluster
    python examples/python/ray_sweep.py --seeds 10         # 4 controllers × 10 seeds = 40 runs
"""

import argparse
import os
import time
from pathlib import Path

import ray

import peregrine

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--address", default=None, help="a running Ray cluster (default: start a local one)")
    args = ap.parse_args()

    scenario = peregrine.Scenario.from_file(
        ROOT / "scenarios" / "dumbbell.toml",
        set={"duration": args.duration, "links.1.loss.p": 0.005},
    )
    grid = {"flows.0.cc": ["cubic", "newreno", "bbr", "vegas"]}

    local = peregrine.sweep(scenario, grid=grid, seeds=args.seeds, threads=args.cpus, progress=False)

    # Start the cluster first so its start-up is not counted as sweep time.
    t0 = time.perf_counter()
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    startup_s = time.perf_counter() - t0
    on_ray = peregrine.sweep(scenario, grid=grid, seeds=args.seeds, backend="ray", progress=False)
    # The same with trivial tasks: Ray's own cost per task.
    noop = ray.remote(num_cpus=1)(lambda: None)
    n = len(local.runs)
    t0 = time.perf_counter()
    ray.get([noop.remote() for _ in range(n)])
    noop_s = time.perf_counter() - t0
    ray.shutdown()

    assert on_ray.summaries == local.summaries, "Ray and local differ"
    assert on_ray.runs.equals(local.runs)
    runs = len(local.runs)
    overhead = (on_ray.wall_s - local.wall_s) / runs
    print(f"{runs} runs; identical on both backends")
    print(f"local ({args.cpus} threads): {local.wall_s:.2f} s")
    print(f"ray   ({args.cpus} CPUs):    {on_ray.wall_s:.2f} s (cluster start {startup_s:.1f} s, not counted)")
    print(f"ray overhead per task: {overhead * 1e3:.1f} ms (sweep), {noop_s / n * 1e3:.1f} ms (no-op task)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(local.aggregate().query("key == '/flows/0/goodput_bps'")[["point", "n", "mean", "ci95"]].to_string(index=False))


if __name__ == "__main__":
    main()
