"""Rule "series-widened-v5" (WIDENED_RULE_VERSION): issue 27's fourth-pass candidate, NOT the lane's rule.

Rule v4 (adaptive.py) departs from 0.5 by what its held-out records supported. Where a series is
close to a coin flip (a daily interest rate a quarter ahead), those records can keep supporting a
departure after the relation that earned it has turned. v5 adds one last step on v4's probability
p4, decided at every origin from earlier origins only (outcomes published by then), as v4's steps:

- widening: p = sigmoid(logit(p4) / T), T in TEMPERATURES — the log-odds pulled toward 0 (p toward
  0.5), what a wider predictive spread does to a probability. At each row T is the one whose Brier
  gain over p4 on the earlier origins (record half-life RECORD_HALF_LIFE_YEARS) is largest, once that
  record holds MIN_RECORD_CHANGES independent changes' worth (before, T = 1).
- gated: the widened probability is published only while its own record over p4 — each earlier origin
  scored with the T chosen before it — passes v4's gate (DRIFT_GATE_Z standard errors); else p4.

It is kept as a backtest rule (`run_backtest(..., rule="v5")`), not bound by the lane: on the data
before 2015 it raises the ECE of the shared table's DGS10 7-day cell above v3's by more than issue
27 allows (bench.forecast_fallback, fourth pass, which therefore keeps v4); BENCHMARKS.md has the
figures, the held-out ones included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forum_atlas.forecasting.adaptive import LastStepRule, RuleAnswer, held_out_gate_passed
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import (
    DRIFT_GATE_Z,
    MIN_RECORD_CHANGES,
    RECORD_HALF_LIFE_YEARS,
    SeriesView,
    held_out_record,
    held_out_sums,
    logit,
    sigmoid,
)
from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.scoring.rules import brier
from forum_atlas.series.parsing import Observation

WIDENED_RULE_VERSION = "series-widened-v5"
WIDENING_DRIVER = "widening"
TEMPERATURES = (1.0, 1.25, 1.5, 2.0)


@dataclass(frozen=True)
class Widening:
    """v5's last step at every row of one question's history, from earlier origins only."""
    horizon: int
    temperatures: tuple[float, ...]
    gate_z: float
    temperature: np.ndarray     # T chosen at each row (1 until the records hold enough changes)
    widened: np.ndarray         # sigmoid(logit(p4) / T)
    record: np.ndarray          # (3, row) held-out sums of the widened probability's gain over p4
    on: np.ndarray              # the record passed: the widened probability is published
    probability: np.ndarray     # what v5 publishes (before Monte-Carlo sampling)

    @classmethod
    def of(cls, p4: np.ndarray, outcome: np.ndarray, usable: np.ndarray, horizon: int, periods_per_year: float,
           temperatures: tuple[float, ...] = TEMPERATURES, gate_z: float = DRIFT_GATE_Z) -> Widening:
        """v5 is the defaults; other `temperatures` and gates are the variants it was chosen against."""
        def gain_over_p4(p: np.ndarray) -> np.ndarray:
            return held_out_sums(brier(p4, outcome) - brier(p, outcome), usable, horizon, periods_per_year)

        scaled = np.stack([sigmoid(logit(p4) / t) for t in temperatures])
        records = np.stack([gain_over_p4(p)[1] for p in scaled])  # weighted sums: argmax of the mean alike
        enough = gain_over_p4(p4)[0] / horizon >= MIN_RECORD_CHANGES
        choice = np.where(enough, np.argmax(records, axis=0), 0)
        temperature = np.asarray(temperatures)[choice]
        widened = np.take_along_axis(scaled, choice[None, :], axis=0)[0]
        record = gain_over_p4(widened)
        on = held_out_gate_passed(record, horizon, gate_z)
        return cls(horizon, temperatures, gate_z, temperature, widened, record, on, np.where(on, widened, p4))

    def answer(self, i: int, answer: RuleAnswer) -> RuleAnswer:
        """v4's answer at row i with the widening driver after its drivers and the step in its record."""
        p4 = answer.record["probability_before_sampling"]
        record = held_out_record(self.record[:, i], self.horizon)
        weight = 1.0 if self.on[i] else 0.0
        temperature, widened = float(self.temperature[i]), float(self.widened[i])
        driver = Driver(
            name=WIDENING_DRIVER, weight=weight, effect=float(logit(widened) - logit(p4)), effect_sd=0.0,
            hypothesis=(f"the rule's probability {p4:.3f} claims more than its record supports: with its log-odds "
                        f"divided by {temperature:g} it is {widened:.3f}"),
            rationale=(f"temperature {temperature:g} of {', '.join(f'{t:g}' for t in self.temperatures)}, the one "
                       f"with the best Brier on earlier origins (half-life {RECORD_HALF_LIFE_YEARS:g} years, once "
                       f"they hold {MIN_RECORD_CHANGES:g} independent changes' worth); each earlier origin scored "
                       f"with the temperature chosen before it, widening gained {record.gain:+.4f} Brier over the rule "
                       f"(± {record.gain_se:.4f}, {record.changes:.0f} changes' worth; counts above "
                       f"{self.gate_z:g} standard errors): {'passed' if weight else 'failed'} — weight {weight:g}"))
        steps = answer.record | {"widened": bool(weight), "widening_temperature": temperature,
                                 "widening_held_out_brier_gain": record.gain,
                                 "probability_before_sampling": float(self.probability[i])}
        return RuleAnswer(answer.base_rate, [*answer.drivers, driver], steps)


class WidenedRule(LastStepRule):
    """Rule v5 on one series: `rule(i, question)` answers as of row i, from rows up to i only (v4's
    history of the last change question asked, and its widening, are kept)."""

    def __init__(self, view: SeriesView, frequency: str):
        super().__init__(view, frequency, lambda history, _comparator, _required, _values, periods_per_year:
                         Widening.of(history.probability, history.outcome, history.usable, history.horizon,
                                     periods_per_year))


def widened_answer(observations: Sequence[Observation], question: BoundQuestion, frequency: str) -> RuleAnswer:
    """Rule v5 (the lane's) for `question` from the observations visible at issue."""
    view = SeriesView.of(observations)
    return WidenedRule(view, frequency)(len(view.values) - 1, question)
