"""Stacking of rule v4 with its two references: issue 27's fifth pass, weighed and NOT made a rule.

Rule v4 (forum_atlas.forecasting.adaptive) is scored against two references, the whole-history base
rate w and a constant 0.5, and on periods it has not seen it must beat the first and not lose to the
second. This step on v4's probability p4 aims at both, decided at every origin from earlier origins
only (outcomes published by then), as v4's steps:

- stacking: p = a_w·w + a_half·0.5 + a_4·p4 with a ≥ 0, Σa = 1, the weights with the least Brier on the
  earlier origins (half-life STACK_HALF_LIFE_YEARS). Brier is a squared error, so this is a least-squares
  fit of the outcome on the three forecasts with the weights on the simplex (Breiman's stacking), solved
  exactly per row. Written relative to w, p = w + b_half·(0.5 − w) + b_4·(p4 − w), b ≥ 0,
  b_half + b_4 ≤ 1, and a ridge pulls b toward 0 (toward w, the reference skill is scored against) with
  STACK_PRIOR_CHANGES independent changes' worth against the record's own size. That size is
  horizon-aware: overlapping h-period outcomes share their path, so the decayed count of earlier origins
  is divided by h (a quarter ahead on daily origins, 65 rows are one change).
- gated: the stacked probability is published only while its own record over p4 (each earlier origin
  scored with the weights fitted before it, half-life RECORD_HALF_LIFE_YEARS) passes a gate: at least
  MIN_RECORD_CHANGES independent changes and a gain above STACK_GATE_Z standard errors; else p4. A
  convex combination can lose to the best of its parts by the error of its weights; the gate keeps v4
  wherever that error has cost more than the combination gained.

bench.forecast_fallback (fifth pass) weighs it on the data before 2015: ungated it loses skill vs the base
rate in more shared cells than v4, gated below 1 SE it raises shared cells' ECE above v3's, and at 1 SE
or more it almost never turns on (v4 with nothing gained), so no rule version publishes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forum_atlas.forecasting.adaptive import held_out_gate_passed
from forum_atlas.forecasting.drivers import held_out_sums
from forum_atlas.scoring.rules import brier

STACK_HALF_LIFE_YEARS = 5.0
STACK_PRIOR_CHANGES = 4.0
# The stacked probability's record over p4 rests on overlapping outcomes and on weights refitted at every
# origin: at v4's 0.25 SE it turned on by noise on the data before 2015 (bench.forecast_fallback, fifth pass).
STACK_GATE_Z = 1.0


def _simplex_least_squares(h11, h12, h22, g1, g2):
    """Per row, argmin over b1, b2 ≥ 0, b1 + b2 ≤ 1 of bᵀHb − 2gᵀb (H positive semi-definite): the best of
    the interior optimum (where feasible), the optimum on each of the three edges, and the three corners."""
    def objective(b1, b2):
        return h11 * b1 * b1 + 2 * h12 * b1 * b2 + h22 * b2 * b2 - 2 * g1 * b1 - 2 * g2 * b2

    def clip01(num, den):
        return np.clip(np.where(den > 1e-15, num / np.where(den > 1e-15, den, 1.0), 0.0), 0.0, 1.0)

    det = h11 * h22 - h12 * h12
    regular = det > 1e-18
    safe = np.where(regular, det, 1.0)
    inner1, inner2 = (h22 * g1 - h12 * g2) / safe, (h11 * g2 - h12 * g1) / safe
    inside = regular & (inner1 >= 0) & (inner2 >= 0) & (inner1 + inner2 <= 1)
    # edge b1 + b2 = 1: b1 = t, b2 = 1 − t
    t = clip01(g1 - g2 - h12 + h22, h11 - 2 * h12 + h22)
    options = [(np.where(inside, inner1, 0.0), np.where(inside, inner2, 0.0)),
               (clip01(g1, h11), np.zeros_like(h11)), (np.zeros_like(h11), clip01(g2, h22)), (t, 1.0 - t)]
    values = np.stack([np.where(inside | (k > 0), objective(b1, b2), np.inf) for k, (b1, b2) in enumerate(options)])
    best = np.argmin(values, axis=0)
    b1 = np.choose(best, [o[0] for o in options])
    b2 = np.choose(best, [o[1] for o in options])
    return b1, b2


@dataclass(frozen=True)
class Stacking:
    """The stacking step at every row of one question's history, from earlier origins only."""
    horizon: int
    half_life: float
    prior: float
    weight_half: np.ndarray     # b_half: the weight moved from w to 0.5
    weight_rule: np.ndarray     # b_4: the weight moved from w to p4
    changes: np.ndarray         # independent changes' worth behind the weights (decayed origins / h)
    stacked: np.ndarray         # w + b_half·(0.5 − w) + b_4·(p4 − w)
    record: np.ndarray          # (3, row) held-out sums of the stacked probability's Brier gain over p4
    on: np.ndarray              # the record passed: the stacked probability is published
    probability: np.ndarray     # the stacked probability where the gate passed, else p4

    @property
    def weight_whole(self) -> np.ndarray:
        return 1.0 - self.weight_half - self.weight_rule

    @classmethod
    def of(cls, p4: np.ndarray, whole: np.ndarray, outcome: np.ndarray, usable: np.ndarray, horizon: int,
           periods_per_year: float, half_life: float = STACK_HALF_LIFE_YEARS, prior: float = STACK_PRIOR_CHANGES,
           gate_z: float = STACK_GATE_Z) -> Stacking:
        """From the origins before each row only (`held_out_sums`: origin s counts at rows ≥ s + h). The
        defaults are the step as weighed; other half-lives, priors and gates are the variants weighed with it."""
        x1, x2, r = 0.5 - whole, p4 - whole, outcome - whole

        def decayed(x: np.ndarray) -> np.ndarray:
            return held_out_sums(x, usable, horizon, periods_per_year, half_life)[:2]

        total, s11 = decayed(x1 * x1)
        s12, s22, t1, t2 = (decayed(x)[1] for x in (x1 * x2, x2 * x2, x1 * r, x2 * r))
        changes = total / horizon
        # ridge toward w in units of each part's own spread (scale-free): `prior` changes against `changes`
        ridge = prior / np.maximum(changes, 1e-9)
        b1, b2 = _simplex_least_squares(s11 * (1 + ridge), s12, s22 * (1 + ridge), t1, t2)
        fitted = total > 0
        b1, b2 = np.where(fitted, b1, 0.0), np.where(fitted, b2, 0.0)
        stacked = whole + b1 * x1 + b2 * x2
        record = held_out_sums(brier(p4, outcome) - brier(stacked, outcome), usable, horizon, periods_per_year)
        on = held_out_gate_passed(record, horizon, gate_z)
        return cls(horizon, half_life, prior, b1, b2, changes, stacked, record, on, np.where(on, stacked, p4))
