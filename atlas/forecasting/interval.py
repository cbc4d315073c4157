"""The 95 % Monte-Carlo sampling interval (FC-3).

It states how far the sampling itself could have moved the point estimate; it is not a measure of
how uncertain the forecast is about the world.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

CI_BASIS = "monte_carlo_sampling_95"
CI_WORDING = ("95% Monte-Carlo sampling interval: how far the simulation's own sampling could have moved "
              "the point estimate. It is not a statement of uncertainty about the world.")
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class SamplingInterval:
    estimate: float
    low: float
    high: float
    method: str        # 'normal' (mean ± 1.96·s/√n) or 'wilson' (estimate at 0 or 1, where s = 0)
    n: int
    sd: float          # sample standard deviation of the 0/1 outcomes, ddof=1
    basis: str = CI_BASIS
    wording: str = CI_WORDING

    def as_dict(self) -> dict:
        return asdict(self)


def wilson(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At k = 0 (k = n) the bound is exactly 0 (1); rounding must not push it past the estimate.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def sampling_interval(successes: int, n: int) -> SamplingInterval:
    """Interval for the share of simulated worlds in which the event happens.

    For 0/1 outcomes the ddof=1 standard deviation is sqrt(n·p(1-p)/(n-1)) exactly, so it is computed
    from the count instead of a second pass over the samples. When every world agrees (p = 0 or 1)
    s is 0 and the normal interval would collapse to a point, so Wilson's interval is used instead.
    """
    if n < 2 or not 0 <= successes <= n:
        raise ValueError(f"need n >= 2 and 0 <= successes <= n, got {successes}/{n}")
    p = successes / n
    sd = math.sqrt(n * p * (1.0 - p) / (n - 1))
    if successes in (0, n):
        low, high = wilson(successes, n)
        return SamplingInterval(p, low, high, "wilson", n, sd)
    half = Z_95 * sd / math.sqrt(n)
    return SamplingInterval(p, max(0.0, p - half), min(1.0, p + half), "normal", n, sd)
