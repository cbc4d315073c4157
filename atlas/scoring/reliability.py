"""Reliability diagram (PNG) from a Murphy decomposition's bins, drawn headless (matplotlib Agg)."""

from __future__ import annotations

import io

from forum_atlas.scoring.metrics import Decomposition


def reliability_png(decomposition: Decomposition, *, title: str = "Reliability of resolved forecasts") -> bytes:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure  # a bare Figure: no pyplot global state, safe in workers

    bins = decomposition.bins
    figure = Figure(figsize=(6.0, 6.4), dpi=100)
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    xs = [b["mean_forecast"] for b in bins]
    ys = [b["observed_frequency"] for b in bins]
    sizes = [b["n"] for b in bins]
    top.plot(xs, ys, marker="o", color="tab:blue", label="observed frequency per bin")
    for x, y, n in zip(xs, ys, sizes):
        top.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.set_ylabel("observed frequency of YES")
    top.set_title(f"{title}\nbinning: {decomposition.binning}", fontsize=10)
    top.legend(loc="upper left", fontsize=8)
    widths = [max(b["upper"] - b["lower"], 0.01) for b in bins]
    bottom.bar([b["lower"] for b in bins], sizes, width=widths, align="edge", color="tab:grey",
               edgecolor="white")
    bottom.set_xlabel("forecast probability")
    bottom.set_ylabel("forecasts")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
