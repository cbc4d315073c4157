"""Summary of a simulated probability distribution: fixed quantile levels and a 20-bin histogram
on [0, 1] (equal-width bins, last bin closed), so any two forecasts are drawn on the same axis."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

QUANTILE_LEVELS = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class Distribution:
    mean: float
    quantiles: dict[str, float]       # level ('0.5') -> value
    histogram_edges: list[float]
    histogram_counts: list[int]

    def as_dict(self) -> dict:
        return asdict(self)


def quantiles_of_sorted(ordered: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """numpy's default ('linear') quantile definition on an already-sorted array: one sort serves all
    levels, where np.quantile would re-partition once per level."""
    position = levels * (len(ordered) - 1)
    lower = np.floor(position).astype(np.intp)
    upper = np.minimum(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


def summarise(values: np.ndarray) -> Distribution:
    levels = np.asarray(QUANTILE_LEVELS)
    qs = quantiles_of_sorted(np.sort(values), levels)
    # Equal-width bins on [0, 1]; a value of exactly 1.0 belongs to the last bin (as np.histogram).
    bins = np.minimum((values * HISTOGRAM_BINS).astype(np.intp), HISTOGRAM_BINS - 1)
    counts = np.bincount(bins, minlength=HISTOGRAM_BINS)
    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    return Distribution(
        mean=float(values.mean()),
        quantiles={f"{level:g}": float(q) for level, q in zip(levels, qs)},
        histogram_edges=[round(float(e), 10) for e in edges],
        histogram_counts=[int(c) for c in counts],
    )
