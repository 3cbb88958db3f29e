"""Compare congestion controllers on the dumbbell: goodput and delay,
mean ± 95 % CI over seeds, as one matplotlib figure.

    python examples/python/compare_controllers.py [--seeds 5] [--out out/python]
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import peregrine

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "python")
    args = ap.parse_args()

    controllers = ["cubic", "newreno", "bbr", "vegas"]
    controllers = [c for c in controllers if c in peregrine.controllers()]
    scenario = peregrine.Scenario.from_file(
        ROOT / "scenarios" / "dumbbell.toml",
        set={"duration": args.duration, "links.1.loss.p": 0.005},
    )
    sweep = peregrine.sweep(scenario, grid={"flows.0.cc": controllers}, seeds=args.seeds)
    agg = sweep.aggregate()

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, scale, label in [
        (axes[0], "/flows/0/goodput_bps", 1e6, "goodput (Mbit/s)"),
        (axes[1], "/flows/0/delay_ms/mean", 1.0, "mean one-way delay (ms)"),
    ]:
        rows = agg[agg.key == key]
        names = [p.split("=", 1)[1] for p in rows.point]
        ax.bar(names, rows["mean"] / scale, yerr=rows["ci95"].fillna(0) / scale, capsize=4)
        ax.set_ylabel(label)
        ax.set_xlabel("controller")
    fig.suptitle(f"dumbbell, 5 Mbit/s, 0.5 % loss: mean ± 95 % CI over {args.seeds} seeds")
    fig.tight_layout()
    args.out.mkdir(parents=True, exist_ok=True)
    png = args.out / "controllers.png"
    fig.savefig(png, dpi=120)

    goodput = agg[agg.key == "/flows/0/goodput_bps"].set_index("point")["mean"]
    for point, g in goodput.items():
        print(f"{point:24} goodput {g / 1e6:6.3f} Mbit/s")
    assert len(sweep.runs) == len(controllers) * args.seeds
    assert (goodput > 0).all() and (goodput < 5.1e6).all(), "at most the 5 Mbit/s bottleneck"
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
