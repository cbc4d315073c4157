"""The 95 % Monte-Carlo sampling interval (FC-3).

It states how far the sampling itself could have moved the point estimate; it is not a measure of
how uncertain the forecast is about the world.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

CI_BASIS = "monte_carlo_sampling_95"
CI_WORDING = ("95% Monte-Carlo sampling interval: how far the simulation's own sampling could have moved "
              "the point estimate. It is not a statement of uncertainty about the world.")
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class SamplingInterval:
    estimate: float
    low: float
    high: float
    method: str        # 'normal': mean ± 1.96·s/√n
    n: int
    sd: float          # sample standard deviation of the worlds' probabilities, ddof=1
    basis: str = CI_BASIS
    wording: str = CI_WORDING

    def as_dict(self) -> dict:
        return asdict(self)


def mean_interval(values: np.ndarray) -> SamplingInterval:
    """Interval for the mean of the simulated worlds' probabilities: mean ± 1.96·s/√n, s the ddof=1
    standard deviation over the worlds, clipped to [0, 1]. When every world has the same probability
    s is 0 and the interval is the point itself: sampling could not have moved the estimate."""
    n = len(values)
    if n < 2:
        raise ValueError(f"need at least 2 simulated worlds, got {n}")
    if values.min() == values.max():  # every world agrees: their mean is that value, not a rounded sum
        return SamplingInterval(float(values[0]), float(values[0]), float(values[0]), "normal", n, 0.0)
    mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = Z_95 * sd / math.sqrt(n)
    return SamplingInterval(mean, max(0.0, mean - half), min(1.0, mean + half), "normal", n, sd)
