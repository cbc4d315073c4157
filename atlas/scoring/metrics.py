"""Brier score, Brier skill scores and the Murphy decomposition (FC-8).

Murphy (1973) decomposition, with forecasts grouped into bins k of n_k forecasts, mean forecast
p̄_k and observed frequency ō_k, overall base rate ō:

    REL = (1/N) Σ_k n_k (p̄_k − ō_k)²        reliability (lower is better)
    RES = (1/N) Σ_k n_k (ō_k − ō)²          resolution (higher is better)
    UNC = ō (1 − ō)                         uncertainty of the outcomes themselves

Binning (documented choice):
- `bins="unique"` groups forecasts by their exact value. For discrete forecasts this is the classic
  decomposition and Brier = REL − RES + UNC holds exactly.
- `bins=K` (the report uses K = 10) groups forecasts into K equal-width bins on [0, 1]
  ([0, 0.1), [0.1, 0.2), …, [0.9, 1.0]). Forecasts then vary inside a bin, and the identity needs the
  two within-bin terms of Stephenson, Coelho & Jolliffe (2008), reported alongside:
      WBV = (1/N) Σ_k Σ_{i∈k} (p_i − p̄_k)²            within-bin variance of the forecasts
      WBC = (2/N) Σ_k Σ_{i∈k} (p_i − p̄_k)(o_i − ō_k)  within-bin covariance
      Brier = REL − RES + UNC + WBV − WBC   (exact)
  Both terms are 0 when every forecast in a bin is the same value.

Expected calibration error (ECE) over the same bins: Σ_k (n_k / N) |p̄_k − ō_k| — the mean distance,
per forecast, between what was forecast and what happened in its bin (0 = perfectly calibrated).

Skill: BSS = 1 − Brier / Brier_ref, against climatology (the reference forecast is the observed
base rate of the scored sample, so Brier_ref = UNC) and against a fixed base rate b (Brier_ref =
mean((b − o)²)). A skill score is undefined (None) when its reference Brier is 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from forum_atlas.scoring import rules

REPORT_BINS = 10


def _arrays(probability, outcome) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probability, dtype=np.float64)
    o = np.asarray(outcome, dtype=np.float64)
    if p.shape != o.shape or p.ndim != 1:
        raise ValueError("probability and outcome must be 1-d arrays of the same length")
    if len(p) == 0:
        raise ValueError("no resolved forecasts to score")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("probabilities must be in [0, 1]")
    if not np.isin(o, (0.0, 1.0)).all():
        raise ValueError("outcomes must be 0 or 1")
    return p, o


def brier_score(probability, outcome) -> float:
    p, o = _arrays(probability, outcome)
    return float(np.mean(rules.brier(p, o)))


def skill(brier: float, reference_brier: float) -> float | None:
    return None if reference_brier == 0 else 1.0 - brier / reference_brier


def log_skill(log_scores, outcome) -> tuple[float, float | None]:
    """Mean of stored log scores (log-v1's, clipped) and its skill against climatology: the observed base rate
    forecast for every question, scored the same way."""
    o = np.asarray(outcome, dtype=np.float64)
    mean = float(np.mean(np.asarray(log_scores, dtype=np.float64)))
    reference = float(np.mean(rules.log_score(np.full(len(o), o.mean()), o)))
    return mean, skill(mean, reference)


@dataclass(frozen=True)
class Decomposition:
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float
    binning: str
    bins: list[dict]  # per non-empty bin: lower, upper, n, mean_forecast, observed_frequency

    @property
    def brier(self) -> float:
        return (self.reliability - self.resolution + self.uncertainty
                + self.within_bin_variance - self.within_bin_covariance)

    def as_dict(self) -> dict:
        return asdict(self)


def _bin_index(p: np.ndarray, bins: str | int) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    if bins == "unique":
        values, index = np.unique(p, return_inverse=True)
        return index, values, values, "unique forecast values"
    k = int(bins)
    if k < 1:
        raise ValueError("bins must be 'unique' or a positive integer")
    index = np.minimum((p * k).astype(np.intp), k - 1)
    edges = np.linspace(0.0, 1.0, k + 1)
    return index, edges[:-1], edges[1:], f"{k} equal-width bins on [0, 1]"


def murphy_decomposition(probability, outcome, *, bins: str | int = "unique") -> Decomposition:
    p, o = _arrays(probability, outcome)
    n = len(p)
    index, lowers, uppers, label = _bin_index(p, bins)
    size = len(lowers)
    count = np.bincount(index, minlength=size).astype(np.float64)
    used = count > 0
    mean_p = np.divide(np.bincount(index, weights=p, minlength=size), count, where=used, out=np.zeros(size))
    if bins == "unique":
        mean_p = lowers.astype(np.float64)  # each bin is one value: use it exactly, not sum/count
    mean_o = np.divide(np.bincount(index, weights=o, minlength=size), count, where=used, out=np.zeros(size))
    base = o.mean()
    reliability = float(np.sum(count * (mean_p - mean_o) ** 2) / n)
    resolution = float(np.sum(count * (mean_o - base) ** 2) / n)
    uncertainty = float(base * (1.0 - base))
    dp = p - mean_p[index]
    within_var = float(np.sum(dp ** 2) / n)
    within_cov = float(2.0 * np.sum(dp * (o - mean_o[index])) / n)
    table = [
        {"lower": float(lowers[k]), "upper": float(uppers[k]), "n": int(count[k]),
         "mean_forecast": float(mean_p[k]), "observed_frequency": float(mean_o[k])}
        for k in np.flatnonzero(used)
    ]
    return Decomposition(reliability, resolution, uncertainty, within_var, within_cov, label, table)


def expected_calibration_error(decomposition: Decomposition) -> float:
    total = sum(b["n"] for b in decomposition.bins)
    return float(sum(b["n"] * abs(b["mean_forecast"] - b["observed_frequency"]) for b in decomposition.bins) / total)


@dataclass(frozen=True)
class AccuracyMetrics:
    n_resolved: int
    brier: float
    base_rate: float                 # observed frequency of YES among resolved forecasts
    fixed_base_rate: float
    brier_climatology: float
    brier_fixed_base_rate: float
    skill_vs_climatology: float | None
    skill_vs_fixed_base_rate: float | None
    decomposition: Decomposition

    def as_dict(self) -> dict:
        return asdict(self)


def accuracy_metrics(probability, outcome, *, fixed_base_rate: float = 0.5,
                     bins: str | int = REPORT_BINS) -> AccuracyMetrics:
    if not 0.0 <= fixed_base_rate <= 1.0:
        raise ValueError(f"fixed_base_rate must be in [0, 1], got {fixed_base_rate}")
    p, o = _arrays(probability, outcome)
    brier = brier_score(p, o)
    base = float(o.mean())
    ref_clim = float(np.mean(rules.brier(base, o)))
    ref_fixed = float(np.mean(rules.brier(fixed_base_rate, o)))
    return AccuracyMetrics(
        n_resolved=len(p), brier=brier, base_rate=base, fixed_base_rate=fixed_base_rate,
        brier_climatology=ref_clim, brier_fixed_base_rate=ref_fixed,
        skill_vs_climatology=skill(brier, ref_clim), skill_vs_fixed_base_rate=skill(brier, ref_fixed),
        decomposition=murphy_decomposition(p, o, bins=bins),
    )
