"""Rule "series-departure-confidence-v8" (CONFIDENT_RULE_VERSION, issue 41, second attempt).

v7 (earned.py) kept v4's departure x = p4 − u from the uninformed forecast u in the proportion
clip(β, 0, 1)·β²/(β² + se²), β the held-out slope of (y − u) on x: a prior centred on "no departure". Where a
drift is real but slow, as a stock market's, a record of a few decades holds it within one or two standard
errors, so that prior drops much of a departure that was paying (on the market index of the design data v7 lost
to the base rate on average: −0.010 at 30d, −0.025 at 1q); where the departure turns against the outcomes β falls
toward or below 0 and any such rule keeps little. v8 asks the record one question only — does the departure point
the right way? — and keeps the departure in proportion to how sure the record is:

- u, x and the record (β and its sandwich standard error se, × √h for overlapping paths, weights halving every
  RECORD_HALF_LIFE_YEARS, at least MIN_EARNING_CHANGES independent changes): v7's `earned_fraction`, unchanged.
- f = Φ(β / se), the probability under a flat prior that the slope is positive; 0 before the record holds
  MIN_EARNING_CHANGES independent changes or while the departure never varied (the fall-back is u).
- published u + f·x (within PROBABILITY_FLOOR of 0 and 1). On a driftless walk β / se is noise around 0 and f
  keeps about half of a departure that is itself small; a departure the record supports at two standard errors
  is kept at 0.98, one it contradicts at two at 0.02.

No constant is new. The form was chosen on data outside issue 41's evaluation blocks (docs/forecasting-
protocol-41b.md: the French market index from arch's Fama–French file and DGS10, against v7, a recent-window
variant and prior-centred variants). Every row uses only the rows up to it, so one pass serves the lane (its last
row) and every origin of a backtest.

It is kept as a backtest rule (`--rule v8`), not bound by the lane: on issue 41's evaluation blocks it met skill vs
0.5 in 7 of 8 blocks at every horizon but lost to the base rate on average at each, and missed the ECE bound in 4 of
8 at one quarter (protocol 41b's log; BENCHMARKS.md, "Forecasting").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from forum_atlas.forecasting.adaptive import PROBABILITY_FLOOR, AdaptiveHistory, LastStepRule, RuleAnswer
from forum_atlas.forecasting.drivers import SeriesView, logit
from forum_atlas.forecasting.earned import (
    MIN_EARNING_CHANGES,
    earned_fraction,
    slope_record,
    slope_words,
    uninformed_rate,
)
from forum_atlas.forecasting.montecarlo import Driver

CONFIDENT_RULE_VERSION = "series-departure-confidence-v8"
CONFIDENT_DRIVER = "departure confidence"


def confidence_fraction(slope: np.ndarray, se: np.ndarray, changes: np.ndarray) -> np.ndarray:
    """Φ(β / se) where the record holds MIN_EARNING_CHANGES independent changes and β has a standard error; else 0
    (a record that fits exactly, se = 0, is sure of the slope's sign)."""
    known = np.isfinite(se) & (changes >= MIN_EARNING_CHANGES)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se > 0, slope / np.where(se > 0, se, 1.0), np.sign(slope) * np.inf)
    return np.where(known, ndtr(z), 0.0)


@dataclass(frozen=True)
class ConfidentDeparture:
    """v8's step at every row of one question's history, from the rows (and published outcomes) up to it."""
    horizon: int
    uninformed: np.ndarray
    slope: np.ndarray
    slope_se: np.ndarray
    record_changes: np.ndarray
    fraction: np.ndarray        # Φ(β / se), the share of v4's departure kept
    probability: np.ndarray     # what v8 publishes (before Monte-Carlo sampling)

    @classmethod
    def of(cls, history: AdaptiveHistory, comparator: str, required: float, values: np.ndarray,
           periods_per_year: float) -> ConfidentDeparture:
        h, p4 = history.horizon, history.probability
        uninformed = uninformed_rate(values, h, comparator, required)
        slope, se, changes, _ = earned_fraction(p4 - uninformed, history.outcome, uninformed, history.usable, h,
                                                periods_per_year)
        fraction = confidence_fraction(slope, se, changes)
        published = np.clip(uninformed + fraction * (p4 - uninformed), PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
        return cls(h, uninformed, slope, se, changes, fraction, published)

    def answer(self, i: int, answer: RuleAnswer) -> RuleAnswer:
        """v4's answer at row i with the departure-confidence driver after its drivers and the step in its record."""
        p4 = answer.record["probability_before_sampling"]
        u, f, published = float(self.uninformed[i]), float(self.fraction[i]), float(self.probability[i])
        slope, se, changes = float(self.slope[i]), float(self.slope_se[i]), float(self.record_changes[i])
        driver = Driver(
            name=CONFIDENT_DRIVER, weight=1.0, effect=float(logit(published) - logit(p4)), effect_sd=0.0,
            hypothesis=(f"the rule's departure {p4 - u:+.3f} from the uninformed forecast {u:.3f} (rises and falls "
                        f"equally likely, ties as the series had them) points the right way with probability "
                        f"{f:.2f}, so {published:.3f}"),
            rationale=slope_words(slope, se, changes, f"Φ(slope / se) = {f:.3f}"))
        steps = answer.record | slope_record(u, slope, se, changes, published) | {"confidence_fraction": f}
        return RuleAnswer(answer.base_rate, [*answer.drivers, driver], steps)


class ConfidentRule(LastStepRule):
    """Rule v8 on one series: `rule(i, question)` answers as of row i, from rows up to i only (v4's history of
    the last change questions asked, and its departure-confidence step, are kept)."""

    def __init__(self, view: SeriesView, frequency: str):
        super().__init__(view, frequency, ConfidentDeparture.of)

