"""The charts of ``peregrine sim`` and ``peregrine sim --sweep`` as
matplotlib figures: ``Results.figures()`` and ``Sweep.figures()``.

The same charts the command line draws into ``plots/`` — per run:
throughput, congestion window and smoothed RTT per flow over time and the
message-latency CDF per stream; per sweep: one bar chart (mean ± 95 %
confidence interval per grid point) per key of interest of ``report.md``
— with the same titles, axis labels, units and Okabe–Ito colours, as
:class:`matplotlib.figure.Figure` objects (no pyplot state), sized for a
paper: ``size="two-column"`` (7 in wide, the text width of a two-column
paper) or ``"one-column"`` (3.5 in). :func:`save` writes them as SVG, PDF
(TrueType fonts embedded, ``pdf.fonttype`` 42) and/or PNG (300 dpi).

>>> figs = peregrine.Scenario.from_file("scenarios/dumbbell.toml").run().figures()
>>> figs["throughput"].savefig("throughput.pdf")            # doctest: +SKIP
>>> peregrine.figures.save(sweep.figures(size="one-column"), "figs", ("pdf", "png"))  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, List, Tuple, Union

#: Figure sizes (width, height) in inches, by name.
SIZES: Dict[str, Tuple[float, float]] = {
    "two-column": (7.0, 4.2),
    "one-column": (3.5, 2.45),
}

#: The Okabe–Ito palette of the command line's charts.
COLORS: List[str] = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
]

#: Most series per chart (as the command line's charts).
MAX_SERIES = 16


def _figure(size: str, title: str, xlabel: str, ylabel: str):
    from matplotlib.figure import Figure

    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, not {size!r}")
    one = size == "one-column"
    fig = Figure(figsize=SIZES[size], layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=8 if one else 11)
    ax.set_xlabel(xlabel, fontsize=7 if one else 10)
    ax.set_ylabel(ylabel, fontsize=7 if one else 10)
    ax.tick_params(labelsize=6 if one else 9)
    ax.grid(True, color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    return fig, ax


def _legend(ax, size: str) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6 if size == "one-column" else 8, frameon=False)


def run_figures(results, size: str = "two-column") -> Dict[str, "object"]:
    """One run's charts (``Results.figures``): ``throughput``, ``cwnd``,
    ``rtt`` and ``latency_cdf``, keyed by the name of the command line's
    SVG file."""
    import numpy as np

    name = results.summary.get("name", "run")
    ts = results.timeseries
    flows = list(dict.fromkeys(ts["flow"]))[:MAX_SERIES] if len(ts) else []
    out = {}
    for key, title, ylabel, column, scale in [
        ("throughput", "throughput per flow", "throughput (Mbit/s)", "throughput_bps", 1e-6),
        ("cwnd", "congestion window per flow", "cwnd (KiB)", "cwnd_bytes", 1 / 1024),
        ("rtt", "smoothed RTT per flow", "smoothed RTT (ms)", "srtt_ms", 1.0),
    ]:
        fig, ax = _figure(size, f"{name}: {title}", "time (s)", ylabel)
        for i, flow in enumerate(flows):
            rows = ts[ts["flow"] == flow]
            ax.plot(
                rows["time_s"],
                rows[column] * scale,
                color=COLORS[i % len(COLORS)],
                linewidth=1.2,
                label=str(flow),
            )
        _legend(ax, size)
        out[key] = fig
    fig, ax = _figure(
        size, f"{name}: message latency per stream", "message latency (ms)", "fraction of messages"
    )
    msgs = results.messages
    groups = list(msgs.groupby(["flow", "stream"], sort=True)) if len(msgs) else []
    for i, ((flow, stream), rows) in enumerate(groups[:MAX_SERIES]):
        values = np.sort(rows["latency_ms"].to_numpy())
        frac = np.arange(1, len(values) + 1) / len(values)
        ax.step(values, frac, where="post", color=COLORS[i % len(COLORS)], linewidth=1.2,
                label=f"{flow} stream {stream}")
    if not groups:
        ax.text(0.5, 0.5, "no message was delivered", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_ylim(0, 1.02)
    _legend(ax, size)
    out["latency_cdf"] = fig
    return out


def sweep_figures(sweep, size: str = "two-column") -> Dict[str, "object"]:
    """A sweep's charts (``Sweep.figures``): per key of interest of
    ``report.md`` (the JSON pointer, ``/flows/0/goodput_bps``), a bar per
    grid point with its mean and 95 % confidence interval, in the key's
    readable unit."""
    agg = sweep.aggregate()
    labels = sweep.labels
    out = {}
    for key, rname, unit, scale in sweep._native.report_keys():
        rows = agg[agg["key"] == key].set_index("point")
        ylabel = f"{rname} ({unit})" if unit else rname
        fig, ax = _figure(size, f"{rname} per grid point", "grid point", f"{ylabel} (mean ± 95 % CI)")
        present = [p for p in labels if p in rows.index]
        means = [rows.loc[p, "mean"] * scale for p in present]
        cis = [
            0.0 if rows.loc[p, "ci95"] != rows.loc[p, "ci95"] else rows.loc[p, "ci95"] * scale
            for p in present
        ]
        ticks = [" · ".join(v.split("=", 1)[-1] for v in p.split(",")) for p in present]
        ax.bar(range(len(present)), means, yerr=cis, capsize=3, color=COLORS[0])
        ax.set_xticks(range(len(present)), ticks, rotation=30 if len(present) > 4 else 0,
                      ha="right" if len(present) > 4 else "center")
        out[key] = fig
    return out


def save(
    figures: Dict[str, "object"],
    out_dir: Union[str, Path],
    formats: Iterable[str] = ("svg",),
) -> List[Path]:
    """Write every figure as ``out_dir/<name>.<format>`` (``svg``, ``pdf``,
    ``png``), PDF with TrueType fonts embedded, PNG at 300 dpi; a key
    that is a JSON pointer becomes a file-name-safe slug
    (``flows_0_goodput_bps``). Returns the files written."""
    import matplotlib

    formats = list(formats)
    bad = [f for f in formats if f not in ("svg", "pdf", "png")]
    if bad:
        raise ValueError(f"formats: unknown {bad[0]!r} (allowed: svg, pdf, png)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42}):
        for name, fig in figures.items():
            slug = "".join(c if c.isalnum() or c == "-" else "_" for c in name).strip("_") or "figure"
            for f in formats:
                path = out / f"{slug}.{f}"
                fig.savefig(path, format=f, dpi=300)
                written.append(path)
    return written
