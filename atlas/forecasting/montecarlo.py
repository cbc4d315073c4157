"""Vectorised Monte-Carlo over driver hypotheses (FC-1..3).

Model, per simulated world j:

    L_j = logit(base_rate) + sum_i weight_i * X_ij,   X_ij ~ Normal(effect_i, effect_sd_i)
    q_j = sigmoid(L_j)                                  (the event's probability in world j)

Effects are in log-odds units; a weight in [0, 1] scales a driver's effect (and its spread). The
published distribution is that of q (quantiles and a histogram); the point estimate is the mean of
q over the worlds, the Monte-Carlo estimate of P(event) = E[q]; the interval is its 95 % Monte-Carlo
sampling interval — how far sampling alone could move the estimate, NOT uncertainty about the world.

Until issue 27 (MC "mc-logit-bernoulli-v1", still recorded on the forecasts it made) the estimate
was the share of worlds in which a Bernoulli(q_j) draw came up: the same expectation, plus the
binomial noise of those draws (sd 0.005 at 10,000 worlds), which moved even a forecast with no
driver counting off its rule's probability. The mean of q is that estimate with the draws
integrated out (Rao–Blackwell): it never has more sampling variance, and it is exactly the rule's
probability when no driver with a spread counts — its interval is then a point, because sampling
cannot move it.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from forum_atlas.forecasting.distribution import Distribution, summarise
from forum_atlas.forecasting.interval import SamplingInterval, mean_interval

MC_VERSION = "mc-logit-mean-v2"
BIT_GENERATOR = "SFC64"  # recorded with the seed: a seed only replays on the same generator
HIGH_CONFIDENCE_SAMPLES = 10_000
DEFAULT_SAMPLES = 1_000


class ForecastInputError(ValueError):
    """A forecast request that cannot be simulated as given."""


@dataclass(frozen=True)
class Driver:
    name: str
    hypothesis: str
    effect: float            # mean shift of the event's log-odds if the hypothesis holds fully
    effect_sd: float = 0.0   # spread of that shift (log-odds)
    weight: float = 1.0      # how much this driver counts, in [0, 1]
    rationale: str = ""
    evidence: tuple[dict, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for label, value in (("effect", self.effect), ("effect_sd", self.effect_sd), ("weight", self.weight)):
            if not math.isfinite(value):
                raise ForecastInputError(f"driver {self.name!r}: {label} must be a finite number, got {value!r}")
        if self.effect_sd < 0:
            raise ForecastInputError(f"driver {self.name!r}: effect_sd must be >= 0")
        if not 0.0 <= self.weight <= 1.0:
            raise ForecastInputError(f"driver {self.name!r}: weight must be in [0, 1], got {self.weight}")

    def as_dict(self) -> dict:
        data = asdict(self)
        data["evidence"] = list(self.evidence)
        return data


@dataclass(frozen=True)
class SimulationResult:
    probability: float
    interval: SamplingInterval
    distribution: Distribution
    n_samples: int
    seed: int
    base_rate: float
    version: str = MC_VERSION


def samples_for(confidence_target: float) -> int:
    """FC-2: 10,000 samples when the confidence target is >= 0.9, else 1,000."""
    check_confidence_target(confidence_target)
    return HIGH_CONFIDENCE_SAMPLES if confidence_target >= 0.9 else DEFAULT_SAMPLES


def check_confidence_target(confidence_target: float) -> None:
    if not (isinstance(confidence_target, (int, float)) and math.isfinite(confidence_target)
            and 0.0 < confidence_target < 1.0):
        raise ForecastInputError(f"confidence_target must be strictly between 0 and 1, got {confidence_target!r}")


def check_base_rate(base_rate: float) -> None:
    if not (math.isfinite(base_rate) and 0.0 < base_rate < 1.0):
        raise ForecastInputError(f"base_rate must be strictly between 0 and 1, got {base_rate!r}")


def new_seed() -> int:
    """A fresh seed that fits PostgreSQL bigint; recorded with the forecast so it can be replayed."""
    return secrets.randbits(63)


def simulate(base_rate: float, drivers: Sequence[Driver], *, n_samples: int, seed: int) -> SimulationResult:
    check_base_rate(base_rate)
    if n_samples < 2:
        raise ForecastInputError("n_samples must be at least 2")
    rng = np.random.Generator(np.random.SFC64(seed))
    shift = np.zeros(n_samples)
    if drivers:
        weights = np.array([d.weight for d in drivers])
        means = np.array([d.effect for d in drivers])
        sds = np.array([d.effect_sd for d in drivers])
        # sum_i w_i * (mu_i + sd_i * Z_ij) for all worlds in one matrix-vector product. float32 draws
        # halve the cost of the dominant step; log-odds need nowhere near float64 precision.
        scale = (weights * sds).astype(np.float32)
        shift += (rng.standard_normal((n_samples, len(drivers)), dtype=np.float32) @ scale).astype(np.float64)
        shift += float(weights @ means)
    # A world no driver moves has exactly the base rate (logit then sigmoid would round it).
    q = np.where(shift == 0.0, base_rate,
                 1.0 / (1.0 + np.exp(-(math.log(base_rate / (1.0 - base_rate)) + shift))))
    interval = mean_interval(q)
    return SimulationResult(
        probability=interval.estimate,
        interval=interval,
        distribution=summarise(q),
        n_samples=n_samples,
        seed=seed,
        base_rate=base_rate,
    )
