"""Rule "series-earned-departure-v7" (EARNED_RULE_VERSION, issue 41).

On a hidden daily series rule v4 lost to a coin by 1.8 % of Brier at 30 days and 6 % at one quarter: it
departs from 0.5 on a historical rate that did not hold out of sample. v7 starts from the forecast that
knows nothing but the series' own ties and departs from it only by as much as its held-out record earned:

- the uninformed forecast u: the question asked of the series' h-period changes with their signs made
  equally likely — the mean of the share of the visible changes X satisfying it and the share of −X
  satisfying it. For "higher than at the origin" that is 0.5 less half the tie rate at that horizon.
- the departure x = p4 − u, p4 rule v4's probability (its machinery kept whole: where v4's departures pay,
  the monthly yields, v7 keeps them).
- the earned fraction f, by the record: at every origin, the least-squares slope β of (y − u) on x over the
  earlier origins whose outcome was published by then (the Brier-optimal multiple of the departure; record
  weights halving every RECORD_HALF_LIFE_YEARS, as v4's records), with its sandwich standard error se, counting
  overlapping paths: origins closer than h share their outcome, so the variance is h times the one of independent
  origins (the record's "independent changes" are its weight over h, as in v4). Then
  f = clip(β, 0, 1) · β² / (β² + se²): v6's normal prior centred on "no departure", so a slope many standard
  errors from 0 is kept whole and one within its noise mostly dropped. Before the record holds
  MIN_EARNING_CHANGES independent changes, f = 0: v4's MIN_RECORD_CHANGES (30) is out of reach of a quarterly
  series at a year (its record's weight, half-life 15 years, never reaches 30 · 4 quarters), where it kept a
  steadily rising GDP at 0.5 for fifty years; with few changes the slope's own standard error does the shrinking.
- the record of forecasts is slow to fill where the horizon is long against the history (8 quarters of a
  quarterly series: 16 years of origins hold 8 independent changes), so the departure may also be earned by the
  drift itself: the whole-history rate w's departure from u, tested as v6 tests it — the standard error of the
  share over consecutive STABILITY_BLOCK_YEARS blocks (regimes counted: a share that moves from block to block
  has a wide one), kept = 1 − (2·se)² / (w − u)² (0 within two standard errors, whole when many), 0 with fewer
  than two complete blocks. f is the larger of
  the two: a departure is earned when either its record or the series' steady drift supports it.
- published: u + f · x (kept within PROBABILITY_FLOOR of 0 and 1).

The constants are v4's record half-life, the rules' MIN_HISTORY as the minimum record, v6's prior form and block
length; none
was chosen on the unseen-series bench (docs/forecasting-protocol-41.md: written before any v7 forecast was scored
there). Every row uses only the rows up to it, so one pass serves the lane (its last row) and every origin of a
backtest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forum_atlas.forecasting.adaptive import PROBABILITY_FLOOR, AdaptiveHistory, LastStepRule, RuleAnswer
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import (
    MIN_HISTORY,
    RECORD_HALF_LIFE_YEARS,
    SeriesView,
    held_out_moments,
    logit,
    satisfied_changes,
)
from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.forecasting.stable import STABILITY_BLOCK_YEARS, block_standard_error
from forum_atlas.series.parsing import Observation

EARNED_RULE_VERSION = "series-earned-departure-v7"
EARNED_DRIVER = "earned departure"
MIN_EARNING_CHANGES = float(MIN_HISTORY)  # independent changes in the record before any departure is earned
# Standard errors the steady drift must clear before it earns anything: a standard error from a handful of blocks
# is itself noisy (one degree of freedom with two blocks), and v6's d²/(d² + se²) kept about 0.4 of a driftless walk.
STEADY_DRIFT_Z = 2.0


def uninformed_rate(values: np.ndarray, horizon: int, comparator: str, required: float) -> np.ndarray:
    """At every row: the share of the h-period changes visible then (X, and their mirror −X) that satisfy
    the question, i.e. the forecast of a series whose rises and falls are equally likely (0.5 before any)."""
    shares = []
    for signed in (values, -values):
        satisfied = satisfied_changes(signed, horizon, comparator, required)
        known = ~np.isnan(satisfied)
        shares.append((np.cumsum(np.where(known, satisfied, 0.0)), np.cumsum(known)))
    (hits, n), (mirrored, _) = shares
    return np.where(n > 0, (hits + mirrored) / np.maximum(2.0 * n, 1.0), 0.5)


def earned_fraction(departure: np.ndarray, outcome: np.ndarray, uninformed: np.ndarray, usable: np.ndarray,
                    horizon: int, periods_per_year: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """At every row, from the earlier origins whose outcome was published: the slope β of (y − u) on the
    departure x, its standard error (overlap counted), the independent changes behind it, and the fraction
    f = clip(β, 0, 1)·β²/(β² + se²) (0 while the record holds fewer than MIN_EARNING_CHANGES)."""
    x, y = departure, outcome - uninformed
    weight, xx, xy, xxyy, xxxy, xxxx = held_out_moments(
        np.stack([np.ones(len(x)), x * x, x * y, x * x * y * y, x ** 3 * y, x ** 4]), usable, horizon,
        periods_per_year)
    changes = weight / horizon
    varies = xx > 1e-12 * np.maximum(weight, 1.0)
    safe = np.where(varies, xx, 1.0)
    slope = np.where(varies, xy / safe, 0.0)
    # Σ w x² e², e = y − βx, from the moments; times h: overlapping outcomes count as one per horizon
    residual = np.maximum(xxyy - 2 * slope * xxxy + slope ** 2 * xxxx, 0.0)
    se = np.where(varies, np.sqrt(horizon * residual) / safe, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = np.where(np.isfinite(se), slope ** 2 / np.maximum(slope ** 2 + se ** 2, 1e-300), 0.0)
    fraction = np.where(varies & (changes >= MIN_EARNING_CHANGES), np.clip(slope, 0.0, 1.0) * kept, 0.0)
    return slope, se, changes, fraction


def steady_drift_fraction(whole: np.ndarray, uninformed: np.ndarray, satisfied: np.ndarray,
                          periods_per_year: float) -> np.ndarray:
    """At every row: 1 − (z·se)² / (w − u)², at least 0, z = STEADY_DRIFT_Z and se the whole-history share's
    standard error over complete STABILITY_BLOCK_YEARS blocks (v6's `block_standard_error`); 0 before two blocks
    are complete."""
    _, se2 = block_standard_error(satisfied, max(int(round(STABILITY_BLOCK_YEARS * periods_per_year)), 1))
    departure = (whole - uninformed) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = 1.0 - STEADY_DRIFT_Z ** 2 * se2 / np.maximum(departure, 1e-300)
    return np.where(np.isfinite(se2), np.clip(kept, 0.0, 1.0), 0.0)


def slope_words(slope: float, se: float, changes: float, kept: str) -> str:
    """The record behind a departure's earned fraction, in words, ending with what was kept (`kept`)."""
    evidence = f"slope {slope:+.3f} ± {se:.3f}" if np.isfinite(se) else "no slope yet (the departure never varied)"
    return (f"on earlier origins whose outcome was known at issue ({changes:.0f} independent changes' worth, half-life "
            f"{RECORD_HALF_LIFE_YEARS:g} years) the outcome's departure from the uninformed forecast regressed on the "
            f"rule's: {evidence}, overlapping horizons counted once; kept {kept}"
            + (f" (0: fewer than {MIN_EARNING_CHANGES:g} changes)" if changes < MIN_EARNING_CHANGES else ""))


def slope_record(uninformed: float, slope: float, se: float, changes: float, published: float) -> dict:
    """The engine record's keys for the departure's record (v7 and v8)."""
    return {"uninformed_forecast": uninformed, "earned_slope": slope,
            "earned_slope_se": se if np.isfinite(se) else None, "earned_record_changes": changes,
            "probability_before_sampling": published}


@dataclass(frozen=True)
class EarnedDeparture:
    """v7's step at every row of one question's history, from the rows (and published outcomes) up to it."""
    horizon: int
    uninformed: np.ndarray
    slope: np.ndarray
    slope_se: np.ndarray
    record_changes: np.ndarray
    record_fraction: np.ndarray     # earned by the record of the rule's departures
    drift_fraction: np.ndarray      # earned by the steady drift of the whole-history rate
    fraction: np.ndarray            # the larger
    probability: np.ndarray     # what v7 publishes (before Monte-Carlo sampling)

    @classmethod
    def of(cls, history: AdaptiveHistory, comparator: str, required: float, values: np.ndarray,
           periods_per_year: float) -> EarnedDeparture:
        h, p4 = history.horizon, history.probability
        uninformed = uninformed_rate(values, h, comparator, required)
        slope, se, changes, by_record = earned_fraction(p4 - uninformed, history.outcome, uninformed,
                                                        history.usable, h, periods_per_year)
        by_drift = steady_drift_fraction(history.candidates[0], uninformed,
                                         satisfied_changes(values, h, comparator, required), periods_per_year)
        fraction = np.maximum(by_record, by_drift)
        published = np.clip(uninformed + fraction * (p4 - uninformed), PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
        return cls(h, uninformed, slope, se, changes, by_record, by_drift, fraction, published)

    def answer(self, i: int, answer: RuleAnswer) -> RuleAnswer:
        """v4's answer at row i with the earned-departure driver after its drivers and the step in its record."""
        p4 = answer.record["probability_before_sampling"]
        u, f, published = float(self.uninformed[i]), float(self.fraction[i]), float(self.probability[i])
        slope, se, changes = float(self.slope[i]), float(self.slope_se[i]), float(self.record_changes[i])
        driver = Driver(
            name=EARNED_DRIVER, weight=1.0, effect=float(logit(published) - logit(p4)), effect_sd=0.0,
            hypothesis=(f"the rule's departure from the uninformed forecast {u:.3f} (rises and falls equally likely, "
                        f"ties as the series had them) is worth {f:.2f} of its {p4 - u:+.3f}, so {published:.3f}"),
            rationale=(slope_words(slope, se, changes, "clip(slope, 0, 1)·slope²/(slope² + se²) = "
                                                       f"{float(self.record_fraction[i]):.3f}")
                       + f"; the whole-history rate's steady drift from it ({STABILITY_BLOCK_YEARS:g}-year blocks) "
                       f"earns {float(self.drift_fraction[i]):.3f}; the larger is kept"))
        steps = answer.record | slope_record(u, slope, se, changes, published) | {
            "earned_fraction": f, "earned_by_record": float(self.record_fraction[i]),
            "earned_by_drift": float(self.drift_fraction[i])}
        return RuleAnswer(answer.base_rate, [*answer.drivers, driver], steps)


class EarnedRule(LastStepRule):
    """Rule v7 on one series: `rule(i, question)` answers as of row i, from rows up to i only (v4's history of
    the last change question asked, and its earned-departure step, are kept)."""

    def __init__(self, view: SeriesView, frequency: str):
        super().__init__(view, frequency, EarnedDeparture.of)


def earned_answer(observations: Sequence[Observation], question: BoundQuestion, frequency: str) -> RuleAnswer:
    """Rule v7 for `question` from the observations visible at issue."""
    view = SeriesView.of(observations)
    return EarnedRule(view, frequency)(len(view.values) - 1, question)
