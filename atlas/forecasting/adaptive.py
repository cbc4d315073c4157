"""Rule "series-adaptive-base-rate-v4" (ADAPTIVE_RULE_VERSION, the lane's rule since issue 27).

Rule v3 forecasts the whole-history base rate ("how often since the series began"), moved by a
gated drift. When the series changes regime that rate is off by as much as the regime moved it.
v4 keeps v3's question, horizon and held-out discipline and adds two steps, each decided at every
origin by its record on earlier origins only (origins whose outcome was published by then):

1. Adaptive base rate. Candidates, each the share of the visible h-period changes satisfying the
   question over a span: the whole history (v3's base rate), rolling windows of ROLLING_WINDOWS_YEARS,
   an exponentially weighted share with half-life EW_HALF_LIFE_YEARS, and no information at all
   (0.5: when a regime reverses the series' long drift, every rate counted from its past is off,
   and 0.5, one of the backtest's references, is often the better forecast). Each rate is shrunk
   toward the whole-history rate by PRIOR_CHANGES independent changes' worth against its own effective
   sample size (Kish's (Σw)²/Σw², divided by h because overlapping changes share their path), so a
   one-year window on quarterly changes (about 4 independent ones) moves only half way. The held-out
   record of each candidate is its Brier gain over the whole-history rate at the earlier origins,
   weighted and gated exactly as v3's drift (half-life RECORD_HALF_LIFE_YEARS, at least
   MIN_RECORD_CHANGES independent changes' worth, mean gain above DRIFT_GATE_Z standard errors).
   The adaptive base rate is the plain mean of the whole-history rate and every candidate that
   passes: equal weights need no further estimate (the choice among candidates with nearly equal
   records is the noisiest step, and an equal-weight combination is known to be hard to beat), and
   it stays the whole-history rate until some candidate has earned its place held out.
2. v3's drift (half-life DRIFT_HALF_LIFE_YEARS), now shrunk toward the adaptive base rate and gated
   by its held-out gain over it.
3. Recalibration: at each origin, a monotone affine map p ↦ ȳ + b·(p − p̄), 0 <= b <= 1, fitted by
   weighted least squares (Brier is a squared error, so this is the Brier-optimal map of that
   family) from step 2's probability to the outcomes of the earlier origins (same record weights).
   The slope never exceeds 1: the map can only pull the rule's variation toward what happened, not
   amplify it. Its own record is the Brier gain, at each earlier origin s, of the map fitted on the
   origins before s; it is applied only when that record passes the same gate.

All of it comes from sums that run forward over the rows (cumulative sums and IIR filter passes),
so one pass gives every row's answer as it was known at that row: the lane reads the last row, the
backtest every origin. The published forecast keeps the whole-history rate as its base rate (the
reference the Accuracy page scores skill against) and expresses each step as a log-odds driver:
"adaptive base rate", "base-rate drift", "recalibration", each with its record in the rationale;
`RuleAnswer.record` names the candidates in use, the best of them and its held-out score, for the
forecast's engine record. The design constants reuse v3's (prior 4 changes, record half-life 15
years, 30 changes, gate 0.25 SE); the issue's windows and the 3-year half-life were set before any
run, and the 0.5 candidate and the equal weights were chosen on backtests of origins before 2015
(BENCHMARKS.md, "Forecast skill", says what was tried).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import (
    DRIFT_GATE_Z,
    DRIFT_HALF_LIFE_YEARS,
    DRIFT_PRIOR_CHANGES,
    MIN_HISTORY,
    MIN_RECORD_CHANGES,
    PERIODS_PER_YEAR,
    RECORD_HALF_LIFE_YEARS,
    HeldOutRecord,
    SeriesView,
    _decayed_sums,
    _own_periods,
    _smoothed_rate,
    change_question,
    check_history,
    drift_driver,
    held_out_record,
    held_out_sums,
    logit,
    origin_outcomes,
    recently_computed,
    satisfied_changes,
)
from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.scoring.rules import brier
from forum_atlas.series.parsing import Observation

ADAPTIVE_RULE_VERSION = "series-adaptive-base-rate-v4"
ADAPTIVE_DRIVER = "adaptive base rate"
RECALIBRATION_DRIVER = "recalibration"
WHOLE_HISTORY = "whole history"
COIN_FLIP = "no information (0.5)"
ROLLING_WINDOWS_YEARS = (1, 2, 5, 10)
EW_HALF_LIFE_YEARS = 3.0
PRIOR_CHANGES = DRIFT_PRIOR_CHANGES
# A recalibrated probability stays this far from 0 and 1: one surprise must not cost a Brier of 1.
PROBABILITY_FLOOR = 0.005


class RuleAnswer(NamedTuple):
    base_rate: float          # the whole-history rate: the forecast's recorded base rate
    drivers: list[Driver]
    record: dict              # what the published probability rests on, for the forecast's engine record


def rolling_window_name(years: int) -> str:
    return f"rolling {years} year{'s' if years > 1 else ''}"


def _ew_name() -> str:
    return f"exponentially weighted, half-life {EW_HALF_LIFE_YEARS:g} years"


def _shrunk(rate: np.ndarray, effective_changes: np.ndarray, whole: np.ndarray) -> np.ndarray:
    return (effective_changes * rate + PRIOR_CHANGES * whole) / (effective_changes + PRIOR_CHANGES)


def held_out_stats(sums: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`held_out_record` at every row of `held_out_sums`, vectorised: independent changes, mean gain, its SE."""
    total, gain_sum, square_sum = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total > 0, gain_sum / total, 0.0)
        changes = total / horizon
        spread = np.sqrt(np.maximum(np.where(total > 0, square_sum / total, 0.0) - mean ** 2, 0.0))
    return changes, mean, spread / np.sqrt(np.maximum(changes, 1.0))


def held_out_gate_passed(sums: np.ndarray, horizon: int, z: float = DRIFT_GATE_Z) -> np.ndarray:
    """`HeldOutRecord.passed` at every row of `held_out_sums`, vectorised (`z`: the standard errors the
    mean gain must exceed; the rules use DRIFT_GATE_Z)."""
    changes, mean, se = held_out_stats(sums, horizon)
    return (changes >= MIN_RECORD_CHANGES) & (mean > z * se)


@dataclass(frozen=True)
class Recalibration:
    """The affine maps fitted at every row on the earlier origins (weighted means, slope in [0, 1])."""
    mean_forecast: np.ndarray
    mean_outcome: np.ndarray
    slope: np.ndarray
    fitted: np.ndarray          # any earlier origin at all

    @classmethod
    def of(cls, forecast: np.ndarray, outcome: np.ndarray, usable: np.ndarray, horizon: int,
           periods_per_year: float) -> Recalibration:
        n = len(forecast)
        sums = np.zeros((5, n))
        if n > horizon:
            earlier = slice(0, n - horizon)
            w = usable[earlier].astype(np.float64)
            p, y = np.where(w > 0, forecast[earlier], 0.0), outcome[earlier]
            decay = 0.5 ** (1.0 / (RECORD_HALF_LIFE_YEARS * periods_per_year))
            sums[:, horizon:] = _decayed_sums(np.stack([w, w * p, w * y, w * p * p, w * p * y]), decay)
        total = sums[0]
        fitted = total > 0
        safe = np.where(fitted, total, 1.0)
        mean_p, mean_y = sums[1] / safe, sums[2] / safe
        variance = sums[3] / safe - mean_p ** 2
        covariance = sums[4] / safe - mean_p * mean_y
        varies = variance > 1e-12  # forecasts that (nearly) never moved say nothing about a slope
        slope = np.where(varies, covariance / np.where(varies, variance, 1.0), 0.0)
        return cls(mean_p, mean_y, np.clip(slope, 0.0, 1.0), fitted)

    def apply(self, forecast: np.ndarray) -> np.ndarray:
        mapped = self.mean_outcome + self.slope * (forecast - self.mean_forecast)
        return np.where(self.fitted, np.clip(mapped, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR), forecast)


def gated_recalibration(raw: np.ndarray, outcome: np.ndarray, usable: np.ndarray, horizon: int,
                        periods_per_year: float) -> tuple[Recalibration, np.ndarray, np.ndarray, np.ndarray]:
    """Step 3 on any probability: the maps fitted at every row, each row's mapped probability, the held-out
    record of mapped over raw and whether it passed (the published probability is mapped where it did)."""
    recalibration = Recalibration.of(raw, outcome, usable, horizon, periods_per_year)
    recalibrated = recalibration.apply(raw)
    record = held_out_sums(brier(raw, outcome) - brier(recalibrated, outcome), usable, horizon, periods_per_year)
    return recalibration, recalibrated, record, held_out_gate_passed(record, horizon)


@dataclass(frozen=True)
class AdaptiveHistory:
    """Rule v4's quantities for one change question, at every row from the rows up to it only."""
    horizon: int
    enough_history: np.ndarray
    known_changes: np.ndarray
    names: tuple[str, ...]      # candidate base rates; names[0] is the whole history
    candidates: np.ndarray      # (candidate, row) shrunk rates
    effective_changes: np.ndarray   # (candidate, row) independent changes behind each, before shrinking
    candidate_records: np.ndarray   # (candidate, 3, row) held-out sums of the gain over the whole history
    in_use: np.ndarray          # (candidate, row): the whole history, and each candidate whose record passed
    adaptive: np.ndarray
    drift: np.ndarray
    drift_changes: np.ndarray
    drift_record: np.ndarray
    drift_on: np.ndarray
    raw: np.ndarray             # the probability before recalibration
    recalibration: Recalibration
    recalibrated: np.ndarray    # the map fitted at each row applied to that row's probability
    recalibration_record: np.ndarray
    recalibration_on: np.ndarray
    probability: np.ndarray     # what the rule publishes (before Monte-Carlo sampling)
    outcome: np.ndarray         # per origin: its question's outcome (0 where not usable)
    usable: np.ndarray          # per origin: its outcome is in the file (a later step's records read these)

    @classmethod
    def of(cls, values: np.ndarray, horizon: int, comparator: str, required: float,
           periods_per_year: float) -> AdaptiveHistory:
        satisfied = satisfied_changes(values, horizon, comparator, required)
        known = ~np.isnan(satisfied)
        hits = np.where(known, satisfied, 0.0)
        counts = np.cumsum(known)
        cumulative_hits = np.cumsum(hits)
        enough_history = counts >= max(MIN_HISTORY, horizon)
        whole = _smoothed_rate(cumulative_hits, counts)
        names, rates, effective = [WHOLE_HISTORY], [whole], [counts / horizon]
        for years in ROLLING_WINDOWS_YEARS:
            span = int(round(years * periods_per_year))
            window_hits, window_n = cumulative_hits.copy(), counts.astype(np.float64)
            window_hits[span:] -= cumulative_hits[:-span]
            window_n[span:] -= counts[:-span]
            independent = window_n / horizon
            rate = np.where(window_n > 0, window_hits / np.maximum(window_n, 1.0), whole)
            names.append(rolling_window_name(years))
            rates.append(_shrunk(rate, independent, whole))
            effective.append(independent)
        decay = 0.5 ** (1.0 / (EW_HALF_LIFE_YEARS * periods_per_year))
        weighted_hits, weight = _decayed_sums(np.stack([hits, known * 1.0]), decay)
        weight_squared = _decayed_sums(known * 1.0, decay ** 2)
        kish = np.where(weight_squared > 0, weight ** 2 / np.where(weight_squared > 0, weight_squared, 1.0), 0.0)
        names.append(_ew_name())
        rates.append(_shrunk(np.where(weight > 0, weighted_hits / np.where(weight > 0, weight, 1.0), whole),
                             kish / horizon, whole))
        effective.append(kish / horizon)
        names.append(COIN_FLIP)
        rates.append(np.full(len(values), 0.5))
        effective.append(np.zeros(len(values)))
        candidates = np.stack(rates)

        outcome, usable = origin_outcomes(values, satisfied, horizon, enough_history)
        whole_brier = brier(whole, outcome)
        records = np.stack([held_out_sums(whole_brier - brier(rate, outcome), usable, horizon, periods_per_year)
                            for rate in candidates])
        in_use = np.stack([held_out_gate_passed(record, horizon) for record in records])
        in_use[0] = True  # the whole history always counts (its gain over itself is 0)
        adaptive = (candidates * in_use).sum(axis=0) / in_use.sum(axis=0)

        # v3's drift, shrunk toward (and gated against) the adaptive base rate instead of the whole history
        prior = DRIFT_PRIOR_CHANGES * horizon
        recent_hits, recent = _decayed_sums(np.stack([hits, known * 1.0]),
                                            0.5 ** (1.0 / (DRIFT_HALF_LIFE_YEARS * periods_per_year)))
        drift = (recent_hits + prior * adaptive) / (recent + prior)
        drift_record = held_out_sums(brier(adaptive, outcome) - brier(drift, outcome), usable, horizon,
                                     periods_per_year)
        drift_on = held_out_gate_passed(drift_record, horizon)
        raw = np.where(drift_on, drift, adaptive)

        recalibration, recalibrated, recalibration_record, recalibration_on = gated_recalibration(
            raw, outcome, usable, horizon, periods_per_year)
        return cls(horizon, enough_history, counts, tuple(names), candidates, np.stack(effective), records, in_use,
                   adaptive, drift, (recent + prior) / horizon, drift_record, drift_on, raw, recalibration,
                   recalibrated, recalibration_record, recalibration_on, np.where(recalibration_on, recalibrated, raw),
                   outcome, usable)

    def basis(self, i: int) -> str:
        """The candidates averaged into the adaptive base rate at row i."""
        return " + ".join(name for name, used in zip(self.names, self.in_use[:, i]) if used)

    def candidate_record(self, candidate: int, i: int) -> HeldOutRecord:
        return held_out_record(self.candidate_records[candidate, :, i], self.horizon)

    def answer(self, i: int, question: BoundQuestion, required: float) -> RuleAnswer:
        """Base rate, drivers and record as known at row i."""
        check_history(bool(self.enough_history[i]), int(self.known_changes[i]), self.horizon, question)
        claim = f"'{question.comparator} {required:+.4g}'"
        whole, adaptive = float(self.candidates[0, i]), float(self.adaptive[i])
        records = [self.candidate_record(c, i) for c in range(len(self.names))]
        in_use = [c for c in range(len(self.names)) if self.in_use[c, i]]
        best = max(in_use, key=lambda c: records[c].gain)  # the whole history (gain 0) when no other passed
        tried = "; ".join(f"{name} {float(self.candidates[c, i]):.3f} ("
                          + ("a constant" if name == COIN_FLIP else
                             f"from about {float(self.effective_changes[c, i]):.0f} independent changes")
                          + f"; held-out gain {r.gain:+.4f} ± {r.gain_se:.4f}, {'passed' if r.passed else 'failed'})"
                          for c, (name, r) in enumerate(zip(self.names, records)) if c)
        gate_words = (f"on earlier origins whose outcome was known at issue (about {records[0].changes:.0f} "
                      f"independent changes' worth, half-life {RECORD_HALF_LIFE_YEARS:g} years); a candidate counts "
                      f"only with at least {MIN_RECORD_CHANGES:g} such changes and a Brier gain over the whole "
                      f"history above {DRIFT_GATE_Z:g} standard errors")
        basis = self.basis(i)
        adaptive_driver = Driver(
            name=ADAPTIVE_DRIVER, weight=1.0 if len(in_use) > 1 else 0.0,
            effect=float(logit(adaptive) - logit(whole)), effect_sd=0.0,
            hypothesis=(f"the share of {question.series_id}'s {self.horizon}-period changes satisfying {claim} is "
                        f"better estimated by the mean of the {basis} rates ({adaptive:.3f}) than by the whole "
                        f"history alone ({whole:.3f})"),
            rationale=(f"candidates, each shrunk toward the whole history by {PRIOR_CHANGES:g} changes' worth: "
                       f"{tried}; {gate_words}; in use: {basis}"))
        drift, drift_record = float(self.drift[i]), held_out_record(self.drift_record[:, i], self.horizon)
        drift_on = bool(self.drift_on[i])
        drift = drift_driver(
            drift, adaptive, "the adaptive base rate", float(self.drift_changes[i]), drift_on,
            hypothesis=f"the share has drifted from the adaptive base rate {adaptive:.3f}: recently it is {drift:.3f}",
            record_words=(f"on earlier origins it gained {drift_record.gain:+.4f} Brier over the adaptive base rate "
                          f"(± {drift_record.gain_se:.4f}, {drift_record.changes:.0f} changes' worth): "
                          f"{'passed' if drift_on else 'failed'}"))
        raw = float(self.raw[i])
        mapped = float(self.recalibrated[i])
        recal_record = held_out_record(self.recalibration_record[:, i], self.horizon)
        recal_weight = 1.0 if self.recalibration_on[i] else 0.0
        recal_driver = Driver(
            name=RECALIBRATION_DRIVER, weight=recal_weight, effect=float(logit(mapped) - logit(raw)), effect_sd=0.0,
            hypothesis=(f"the rule's probability {raw:.3f} means {mapped:.3f} when mapped to the frequencies observed "
                        "at earlier origins"),
            rationale=(f"monotone map p ↦ {self.recalibration.mean_outcome[i]:.3f} + "
                       f"{self.recalibration.slope[i]:.3f}·(p − {self.recalibration.mean_forecast[i]:.3f}), fitted by "
                       f"least squares on earlier origins only; each earlier origin scored with the map fitted before "
                       f"it, it gained {recal_record.gain:+.4f} Brier (± {recal_record.gain_se:.4f}, "
                       f"{recal_record.changes:.0f} changes' worth): {'passed' if recal_weight else 'failed'} — "
                       f"weight {recal_weight:g}"))
        record = {"base_rate_candidates": [self.names[c] for c in in_use], "base_rate": adaptive,
                  "whole_history_rate": whole, "best_candidate": self.names[best],
                  "held_out_brier_gain": records[best].gain, "held_out_brier_gain_se": records[best].gain_se,
                  "held_out_changes": records[best].changes, "drift": drift_on,
                  "recalibrated": bool(recal_weight), "probability_before_sampling": float(self.probability[i])}
        return RuleAnswer(whole, [adaptive_driver, drift, recal_driver], record)


class AdaptiveRule:
    """Rule v4 on one series: `rule(i, question)` answers as of row i, from rows up to i only (the
    histories of the last change questions asked are kept, as in `DriftRule`)."""

    def __init__(self, view: SeriesView, frequency: str):
        self.view, self.frequency = view, frequency
        self._histories: list[tuple[tuple, AdaptiveHistory]] = []

    def history(self, i: int, question: BoundQuestion) -> tuple[AdaptiveHistory, int, float]:
        change = change_question(self.view.upto(i), question, _own_periods(self.frequency))
        key = (change.horizon, question.comparator, change.required)
        history = recently_computed(self._histories, key.__eq__, key, lambda: AdaptiveHistory.of(
            self.view.values, *key, PERIODS_PER_YEAR.get(self.frequency, 12.0)))
        return history, change.last_index, change.required

    def __call__(self, i: int, question: BoundQuestion) -> RuleAnswer:
        history, last_index, required = self.history(i, question)
        return history.answer(last_index, question, required)


class LastStep(Protocol):
    def answer(self, i: int, answer: RuleAnswer) -> RuleAnswer: ...


class LastStepRule:
    """Rule v4 followed by one last step on its history (v5's widening, v6's stability): `rule(i, question)`
    answers as of row i, from rows up to i only. `step(history, comparator, required, values, periods per
    year)` computes the step at every row of a question's history, once per history, as v4 does."""

    def __init__(self, view: SeriesView, frequency: str,
                 step: Callable[[AdaptiveHistory, str, float, np.ndarray, float], LastStep]):
        self.adaptive = AdaptiveRule(view, frequency)
        self.periods_per_year = PERIODS_PER_YEAR.get(frequency, 12.0)
        self.step = step
        self._steps: list[tuple[AdaptiveHistory, LastStep]] = []

    def __call__(self, i: int, question: BoundQuestion) -> RuleAnswer:
        history, last_index, required = self.adaptive.history(i, question)
        step = recently_computed(self._steps, lambda known: known is history, history, lambda: self.step(
            history, question.comparator, required, self.adaptive.view.values, self.periods_per_year))
        return step.answer(last_index, history.answer(last_index, question, required))


def adaptive_answer(observations: Sequence[Observation], question: BoundQuestion, frequency: str) -> RuleAnswer:
    """Rule v4 (the lane's) for `question` from the observations visible at issue."""
    view = SeriesView.of(observations)
    return AdaptiveRule(view, frequency)(len(view.values) - 1, question)
