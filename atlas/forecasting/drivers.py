"""The documented deterministic driver rule for bound (series) questions.

Everything comes from the vintage the forecaster could see at issue; empty observations are
dropped, never filled. The rule works on arrays (dates as datetime64[D], values with NaN for an
empty row) so the backtest can call it at thousands of origins (v3 computes its history once per
question shape, each row from the rows up to it: `DriftRule`). The lane's rule since issue 27, v4,
builds on v3 in `adaptive.py`.

Rule "series-held-out-drift-v3" (RULE_VERSION, the lane's rule from issue 11 until v4 replaced it in issue 27):

1. Horizon h and the change question exactly as in v2 (step 1 below). The rule needs at least
   max(MIN_HISTORY, h) visible h-period changes — at least one horizon's worth, so the base rate does
   not rest on a handful of changes that share most of their path.
2. Base rate (climatology): unchanged (v2 step 2), and what the forecast falls back to: with the
   drift at weight 0 every simulated world has exactly the base rate, and the published share of
   worlds differs from it by Monte-Carlo sampling only.
3. One driver, "base-rate drift": the decay-weighted share of the visible changes (half-life
   DRIFT_HALF_LIFE_YEARS), shrunk toward the base rate by DRIFT_PRIOR_CHANGES independent changes'
   worth (DRIFT_PRIOR_CHANGES · h overlapping ones). It has no fitted coefficient, so its forecast at
   any earlier origin s used only data up to s: its record there is genuinely held out.
4. Held-out gate: at every earlier origin s whose outcome was known at issue (s + h <= last, and
   where the rule could have forecast), the Brier gain of the drift over the base rate; origins
   weighted by a half-life of RECORD_HALF_LIFE_YEARS. The drift counts (weight 1) only if that record
   holds at least MIN_RECORD_CHANGES independent changes' worth of origins (weight sum / h) and its
   mean gain exceeds DRIFT_GATE_Z standard errors; otherwise weight 0 and the forecast is the base
   rate. Long horizons on short files never reach MIN_RECORD_CHANGES, so they stay on the base rate.
   The driver's rationale states the record and the verdict.
   The design constants (half-lives 10 and 15 years, prior 4 changes, 30 record changes, gate 0.25
   SE, the one-horizon minimum history) were chosen after backtesting the series in BENCHMARKS.md;
   the forecasts only ever use data visible at issue.

Rule "series-shrunk-drivers-v2" (SHRUNK_RULE_VERSION, the lane's rule before v3):

1. Horizon h counts the series' own periods from the last published observation to the target
   (business days for a daily series, months, quarters; `periods_between`). The question becomes
   "will the h-period change Δ satisfy Δ <cmp> c?", c = threshold − last value, reference value −
   last value (reference already published), or 0 between reference and target (both future).
2. Base rate (climatology): the share of all visible h-period changes that satisfied it, with a
   +0.5/+1 continuity correction — unchanged from v1, and the reference the backtest scores against.
3. Drivers, each a log-odds effect relative to the base rate:
   - "base-rate drift": a recalibration of the base rate to the recent history;
   - "recent momentum": the share over the last 6 non-overlapping h-period changes;
   - "medium-term regime": the share over the last 24 non-overlapping changes.
   How much each one counts is not assumed but fitted on the history itself: at every earlier
   origin s whose outcome was already known at issue (s + h <= last), the rule knew the base rate
   and both shares as of s; a ridge logistic regression (offset logit(base rate), prior sd 0.5 per
   coefficient (0.35 for the drift), each origin weighted by stride/h so overlapping changes count
   as one observation, and by a half-life of HALF_LIFE_YEARS so old regimes fade) gives β.
4. Held-out gate, on models fitted only on the older two thirds of those origins and scored on the
   newest third: the drift always counts (its prior is the shrinkage); the two shares count only if
   drift + shares beat the drift alone there by more than SHARES_GATE_Z standard errors of the
   Brier gain, else they get weight 0. Each driver's rationale says what it claims, its fitted
   coefficient, and the test it passed or failed.
   The design constants (half-life, prior, gate) were chosen by looking at backtests of the series
   in BENCHMARKS.md; the coefficients themselves only ever see origins before the issue.

Rule "series-climatology-momentum-v1" (LEGACY_RULE_VERSION, forecasts bound before issue 11):
horizon = calendar days / median spacing; drivers = the shares over the last 6 and 24 *overlapping*
h-period changes with fixed weights 0.5 and 0.3. Kept so the backtest can show what it scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

import numpy as np
from scipy.signal import lfilter

from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError
from forum_atlas.scoring.resolution import COMPARATORS
from forum_atlas.scoring.rules import brier
from forum_atlas.series.parsing import Observation, periods_between

RULE_VERSION = "series-held-out-drift-v3"
SHRUNK_RULE_VERSION = "series-shrunk-drivers-v2"
LEGACY_RULE_VERSION = "series-climatology-momentum-v1"
MIN_HISTORY = 8
SHARE_WINDOWS = (("recent momentum", 6), ("medium-term regime", 24))
DRIFT_DRIVER = "base-rate drift"
# Prior sd of each coefficient (log-odds per unit of its feature: momentum, regime, drift)
PRIOR_SD = np.array([0.5, 0.5, 0.35])
HALF_LIFE_YEARS = 15.0
MIN_FIT_ORIGINS = 24
SHARES_GATE_Z = 2.0
# Nested models (feature columns of _Features) and the held-out gain, in standard errors, each must
# show over the one before it: the drift always counts (-inf: its prior does the shrinking; its
# held-out gain is still reported), both shares + drift must beat the drift alone.
MODELS = (((2,), -math.inf), ((0, 1, 2), SHARES_GATE_Z))
MAX_FIT_ORIGINS = 2000
FIT_HALF_LIVES = 4
PERIODS_PER_YEAR = {"daily": 261.0, "weekly": 52.0, "monthly": 12.0, "quarterly": 4.0, "annual": 1.0}
LEGACY_WINDOWS = (("recent momentum", 6, 0.5), ("medium-term regime", 24, 0.3))
# Rule v3 (see the module docstring)
DRIFT_HALF_LIFE_YEARS = 10.0
DRIFT_PRIOR_CHANGES = 4.0
RECORD_HALF_LIFE_YEARS = 15.0
MIN_RECORD_CHANGES = 30.0
DRIFT_GATE_Z = 0.25


def _smoothed_rate(hits, n):
    return (hits + 0.5) / (n + 1.0)


def logit(p):
    return np.log(p / (1.0 - p))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@dataclass(frozen=True)
class SeriesView:
    """The observations visible at issue, as arrays."""
    dates: np.ndarray   # datetime64[D], ascending
    values: np.ndarray  # float64, NaN where the row is empty

    @classmethod
    def of(cls, observations: Sequence[Observation]) -> SeriesView:
        return cls(np.array([o.observation_date for o in observations], dtype="datetime64[D]"),
                   np.array([np.nan if o.value is None else o.value for o in observations], dtype=np.float64))

    def upto(self, index: int) -> SeriesView:
        """The rows dated on or before row `index`: nothing after it reaches a rule given this view."""
        return SeriesView(self.dates[:index + 1], self.values[:index + 1])


@dataclass(frozen=True)
class ChangeQuestion:
    """A bound question restated on the visible data: will the `horizon`-period change from the last
    published value satisfy `comparator required`?"""
    horizon: int
    required: float
    last_index: int


def _own_periods(frequency: str):
    """Horizon counting of rules v2 and v3: the series' own periods (business days, months, quarters)."""
    return lambda later, earlier: periods_between(earlier, later, frequency)


def change_question(view: SeriesView, question: BoundQuestion, horizon_between) -> ChangeQuestion:
    """`horizon_between(later, earlier)` counts periods; the two rules count them differently."""
    known = ~np.isnan(view.values)
    if known.sum() < MIN_HISTORY:
        raise ForecastInputError(f"{question.series_id}: only {int(known.sum())} published observations at issue; "
                                 f"the driver rule needs at least {MIN_HISTORY}")
    last_index = int(np.flatnonzero(known)[-1])
    last_date = view.dates[last_index].astype(date)
    last_value = float(view.values[last_index])
    if question.reference_date is not None and question.reference_date <= last_date:
        match = int(np.searchsorted(view.dates, np.datetime64(question.reference_date)))
        if match >= len(view.dates) or view.dates[match] != np.datetime64(question.reference_date) \
                or not known[match]:
            raise ForecastInputError(f"{question.series_id}: reference observation {question.reference_date} is not "
                                     "published in the vintage visible at issue")
        return ChangeQuestion(max(1, horizon_between(question.target_date, last_date)),
                              float(view.values[match]) - last_value, last_index)
    if question.reference_date is not None:
        return ChangeQuestion(max(1, horizon_between(question.target_date, question.reference_date)), 0.0, last_index)
    return ChangeQuestion(max(1, horizon_between(question.target_date, last_date)),
                          float(question.threshold) - last_value, last_index)


def satisfied_changes(values: np.ndarray, horizon: int, comparator: str, required: float) -> np.ndarray:
    """At index j: 1.0 if the change from j − horizon to j satisfied the question, 0.0 if not, NaN if
    either end is empty or j < horizon. Pairs with an empty end are dropped, never filled."""
    out = np.full(len(values), np.nan)
    if horizon < len(values):
        change = values[horizon:] - values[:-horizon]
        known = ~np.isnan(change)
        tail = np.full(len(change), np.nan)
        tail[known] = COMPARATORS[comparator](change[known], required)
        out[horizon:] = tail
    return out


def _strided_cumsum(x: np.ndarray, step: int) -> np.ndarray:
    """c[j] = x[j] + x[j − step] + x[j − 2·step] + …: sums over non-overlapping changes in O(n)."""
    rows = -(-len(x) // step)
    padded = np.zeros(rows * step)
    padded[:len(x)] = x
    return padded.reshape(rows, step).cumsum(axis=0).reshape(-1)[:len(x)]


class _Features:
    """The base rate and the drivers' features as the rule knew them at any index s (changes ending
    at or before s only): columns logit(share over the last W non-overlapping changes) − logit(base
    rate), one per SHARE_WINDOWS entry, and a constant 1 for the drift."""

    def __init__(self, satisfied: np.ndarray, horizon: int):
        known = ~np.isnan(satisfied)
        hits = np.where(known, satisfied, 0.0)
        self.horizon = horizon
        self.hits, self.known = np.cumsum(hits), np.cumsum(known)
        self.strided_hits, self.strided_known = _strided_cumsum(hits, horizon), _strided_cumsum(known, horizon)

    def base(self, at: np.ndarray) -> np.ndarray:
        return _smoothed_rate(self.hits[at], self.known[at])

    def window(self, at: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
        earlier = at - window * self.horizon
        inside = earlier >= 0
        hits, known = self.strided_hits[at].copy(), self.strided_known[at].copy()
        hits[inside] -= self.strided_hits[earlier[inside]]
        known[inside] -= self.strided_known[earlier[inside]]
        return hits, known

    def at(self, at: np.ndarray) -> np.ndarray:
        base = logit(self.base(at))
        columns = [logit(_smoothed_rate(*self.window(at, window))) - base for _, window in SHARE_WINDOWS]
        return np.column_stack([*columns, np.ones(len(at))])


def _ridge_logistic(offset: np.ndarray, features: np.ndarray, outcome: np.ndarray, weight: np.ndarray,
                    prior_sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MAP coefficients under Normal(0, prior_sd²) priors, and their posterior covariance (Newton)."""
    penalty = np.diag(1.0 / prior_sd ** 2)
    beta = np.zeros(features.shape[1])
    for _ in range(25):
        p = sigmoid(offset + features @ beta)
        hessian = (features * (weight * p * (1 - p))[:, None]).T @ features + penalty
        step = np.linalg.solve(hessian, features.T @ (weight * (outcome - p)) - penalty @ beta)
        beta += step
        if np.abs(step).max() < 1e-6:
            break
    return beta, np.linalg.inv(hessian)


@dataclass(frozen=True)
class _Test:
    columns: tuple[int, ...]   # the model tested (feature columns)
    gain: float                # held-out Brier gain over the model before it (newest third)
    gain_se: float
    needed_z: float

    @property
    def passed(self) -> bool:
        return self.gain > self.needed_z * self.gain_se

    def words(self, against: str) -> str:
        gained = f"held out on the newest third it gained {self.gain:+.4f} Brier over {against}"
        if self.needed_z == -math.inf:
            return f"{gained} (± {self.gain_se:.4f}); it counts without a test, shrunk by its prior"
        return (f"{gained} (needed > {self.needed_z:g} × {self.gain_se:.4f}): "
                f"{'passed' if self.passed else 'failed'}")


@dataclass(frozen=True)
class _Fit:
    origins: int
    tests: tuple[_Test, ...]   # drift vs base rate, then shares + drift vs drift (stops at a failure)
    beta: np.ndarray           # one coefficient per feature (0 for the unused ones)
    sd: np.ndarray             # posterior sd per feature (0 for the unused ones)

    @property
    def columns(self) -> tuple[int, ...]:
        passed = [t.columns for t in self.tests if t.passed]
        return passed[-1] if passed else ()


def _fit_on_history(features: _Features, satisfied: np.ndarray, values: np.ndarray, horizon: int, last_index: int,
                    periods_per_year: float) -> _Fit | None:
    """Fit and test the nested MODELS on the earlier origins whose outcome was known at issue; None
    when there are too few of them."""
    # Origins older than FIT_HALF_LIVES half-lives weigh < 1/16 and are left out; at most about
    # MAX_FIT_ORIGINS of them, evenly spaced and counted back from the newest (keeps a call ~ms).
    span = int(FIT_HALF_LIVES * HALF_LIFE_YEARS * periods_per_year)
    stride = max(1, horizon // 4, -(-span // MAX_FIT_ORIGINS))
    oldest = max(2 * horizon - 1, last_index - horizon - span)
    origins = np.arange(last_index - horizon, oldest, -stride)[::-1]
    if len(origins):
        origins = origins[~np.isnan(values[origins]) & ~np.isnan(satisfied[origins + horizon])]
    cut = origins[len(origins) * 2 // 3] if len(origins) else 0
    older, newer = origins + horizon <= cut, origins >= cut  # older outcomes were known before `cut`
    if len(origins) < MIN_FIT_ORIGINS or older.sum() < MIN_FIT_ORIGINS // 2 or newer.sum() < 2:
        return None
    outcome = satisfied[origins + horizon]
    base = features.base(origins)
    offset = logit(base)
    x = features.at(origins)
    weight = stride / horizon * 0.5 ** ((last_index - origins) / (HALF_LIFE_YEARS * periods_per_year))
    w = weight[newer]
    effective_n = max(w.sum() ** 2 / np.sum(w ** 2) * stride / horizon, 1.0)  # overlapping changes count once
    previous = base[newer]
    tests = []
    for columns, needed_z in MODELS:
        beta_older, _ = _ridge_logistic(offset[older], x[older][:, columns], outcome[older], weight[older],
                                        PRIOR_SD[list(columns)])
        held_out = sigmoid(offset[newer] + x[newer][:, columns] @ beta_older)
        difference = brier(previous, outcome[newer]) - brier(held_out, outcome[newer])
        tests.append(_Test(columns, float(np.sum(w * difference) / w.sum()),
                           float(np.std(difference) / math.sqrt(effective_n)), needed_z))
        if not tests[-1].passed:
            break
        previous = held_out
    fit = _Fit(len(origins), tuple(tests), np.zeros(x.shape[1]), np.zeros(x.shape[1]))
    if fit.columns:
        chosen = list(fit.columns)
        fit.beta[chosen], covariance = _ridge_logistic(offset, x[:, chosen], outcome, weight, PRIOR_SD[chosen])
        fit.sd[chosen] = np.sqrt(np.diag(covariance))
    return fit


def shrunk_drivers_for(view: SeriesView, question: BoundQuestion, frequency: str) -> tuple[float, list[Driver]]:
    """Rule v2: base rate and drivers for `question` from the arrays visible at issue."""
    change = change_question(view, question, _own_periods(frequency))
    h = change.horizon
    values = view.values[:change.last_index + 1]
    satisfied = satisfied_changes(values, h, question.comparator, change.required)
    if np.count_nonzero(~np.isnan(satisfied)) < MIN_HISTORY:
        raise ForecastInputError(f"{question.series_id}: too little history for a {h}-period horizon")
    features = _Features(satisfied, h)
    last = np.array([change.last_index])
    base_rate = float(features.base(last)[0])
    now = features.at(last)[0]
    fit = _fit_on_history(features, satisfied, values, h, change.last_index, PERIODS_PER_YEAR.get(frequency, 12.0))
    claim = f"'{question.comparator} {change.required:+.4g}'"
    beta = fit.beta if fit else np.zeros(len(now))
    sd = fit.sd if fit else np.zeros(len(now))

    def verdict(i: int) -> tuple[str, float]:
        if fit is None:
            return f"fewer than {MIN_FIT_ORIGINS} earlier origins to fit it on, so it does not count (weight 0)", 0.0
        words = [f"fitted on {fit.origins} earlier origins whose outcome was known at issue"]
        for test, against in zip(fit.tests, ("the base rate", "the drift alone")):
            if i in test.columns:
                words.append(test.words(against))
                break
            words.append(f"first the smaller model: {test.words(against)}")
        weight = 1.0 if i in fit.columns else 0.0
        return "; ".join(words) + f" — weight {weight:g}", weight

    drivers = []
    for i, (name, window) in enumerate(SHARE_WINDOWS):
        window_hits, window_n = (int(v[0]) for v in features.window(last, window))
        x = float(now[i])
        words, weight = verdict(i)
        drivers.append(Driver(
            name=name, weight=weight, effect=float(beta[i] * x), effect_sd=float(abs(x) * sd[i]),
            hypothesis=(f"{question.series_id}'s last {window_n} non-overlapping {h}-period changes satisfied "
                        f"{claim} at a rate that says something about the next one"),
            rationale=(f"{window_hits} of the last {window_n} non-overlapping changes satisfied it, against a base "
                       f"rate of {base_rate:.3f}; coefficient {beta[i]:+.3f} ± {sd[i]:.3f} per log-odds unit of "
                       f"that difference — {words}"),
        ))
    words, weight = verdict(len(SHARE_WINDOWS))
    drivers.append(Driver(
        name=DRIFT_DRIVER, weight=weight, effect=float(beta[-1]), effect_sd=float(sd[-1]),
        hypothesis=(f"the share of {question.series_id}'s {h}-period changes satisfying {claim} has drifted from "
                    "its whole-history base rate"),
        rationale=f"recent origins weigh more (half-life {HALF_LIFE_YEARS:g} years); {words}",
    ))
    return base_rate, drivers


def _decayed_sums(x: np.ndarray, decay: float) -> np.ndarray:
    """s[j] = x[j] + decay · x[j − 1] + decay² · x[j − 2] + … (one C-level pass)."""
    return lfilter([1.0], [1.0, -decay], x, axis=-1)


def origin_outcomes(values: np.ndarray, satisfied: np.ndarray, horizon: int, enough_history: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per origin s: the outcome of the change ending at s + h (0 where unusable), and whether s is
    usable — a published row where the rule could forecast, whose outcome is in the file."""
    outcome = np.full(len(values), np.nan)
    outcome[:max(len(values) - horizon, 0)] = satisfied[horizon:]
    usable = ~np.isnan(values) & ~np.isnan(outcome) & enough_history
    return np.where(usable, outcome, 0.0), usable


def held_out_sums(gain: np.ndarray, usable: np.ndarray, horizon: int, periods_per_year: float,
                  half_life_years: float = RECORD_HALF_LIFE_YEARS) -> np.ndarray:
    """Rows Σ w, Σ w·gain, Σ w·gain² at every row i over the usable origins s <= i − h (their outcome
    was published by row i), w halving every `half_life_years` (the rules use RECORD_HALF_LIFE_YEARS)."""
    return held_out_moments(np.stack([np.ones(len(gain)), gain, gain ** 2]), usable, horizon, periods_per_year,
                            half_life_years)


def held_out_moments(terms: np.ndarray, usable: np.ndarray, horizon: int, periods_per_year: float,
                     half_life_years: float = RECORD_HALF_LIFE_YEARS) -> np.ndarray:
    """Σ w·term for each row of `terms` (term × origin) at every row i, over the usable origins s <= i − h
    (their outcome was published by row i), w halving every `half_life_years`."""
    record = np.zeros(terms.shape)
    if terms.shape[1] > horizon:
        earlier = slice(0, terms.shape[1] - horizon)
        scored = np.where(usable[earlier], terms[:, earlier], 0.0)
        decay = 0.5 ** (1.0 / (half_life_years * periods_per_year))
        record[:, horizon:] = decay ** horizon * _decayed_sums(scored, decay)
    return record


def held_out_record(sums: np.ndarray, horizon: int) -> HeldOutRecord:
    """The record's mean gain and its standard error from one column of `held_out_sums`."""
    total, gain_sum, square_sum = sums
    if total <= 0:
        return HeldOutRecord(0.0, 0.0, 0.0)
    mean = gain_sum / total
    changes = total / horizon  # overlapping changes count as one
    spread = math.sqrt(max(square_sum / total - mean ** 2, 0.0))
    return HeldOutRecord(float(changes), float(mean), spread / math.sqrt(max(changes, 1.0)))


@dataclass(frozen=True)
class HeldOutRecord:
    """How the drift did against the base rate on the earlier origins whose outcome was known at issue."""
    changes: float   # their decay-weighted count, in independent h-period changes (weight sum / h)
    gain: float      # weighted mean Brier gain of the drift over the base rate (> 0: the drift was better)
    gain_se: float

    @property
    def passed(self) -> bool:
        return self.changes >= MIN_RECORD_CHANGES and self.gain > DRIFT_GATE_Z * self.gain_se

    def words(self) -> str:
        verdict = "passed" if self.passed else "failed"
        return (f"on earlier origins whose outcome was known at issue (about {self.changes:.0f} independent changes' "
                f"worth, half-life {RECORD_HALF_LIFE_YEARS:g} years) it gained {self.gain:+.4f} Brier over the base "
                f"rate (± {self.gain_se:.4f}); it counts only with at least {MIN_RECORD_CHANGES:g} such changes and "
                f"a gain above {DRIFT_GATE_Z:g} standard errors: {verdict}")


@dataclass(frozen=True)
class DriftHistory:
    """Rule v3's quantities for one change question (horizon, comparator, required change) as they
    were known at every row i of a series, each computed from rows up to i only — so one pass serves
    the lane (read at the last row) and every origin of a backtest (read at the origin)."""
    horizon: int
    enough_history: np.ndarray  # at least max(MIN_HISTORY, h) changes visible
    known_changes: np.ndarray
    base: np.ndarray            # the base rate
    drift: np.ndarray           # the drifted share
    drift_changes: np.ndarray   # independent changes behind the drift (prior included)
    record: np.ndarray          # rows: weight sum, Σ w·gain, Σ w·gain² over the held-out earlier origins

    @classmethod
    def of(cls, values: np.ndarray, horizon: int, comparator: str, required: float,
           periods_per_year: float) -> DriftHistory:
        satisfied = satisfied_changes(values, horizon, comparator, required)
        known = ~np.isnan(satisfied)
        counts = np.cumsum(known)
        enough_history = counts >= max(MIN_HISTORY, horizon)
        hits = np.where(known, satisfied, 0.0)
        base = _smoothed_rate(np.cumsum(hits), counts)
        prior = DRIFT_PRIOR_CHANGES * horizon
        recent_hits, recent = _decayed_sums(np.stack([hits, known.astype(np.float64)]),
                                            0.5 ** (1.0 / (DRIFT_HALF_LIFE_YEARS * periods_per_year)))
        drift = (recent_hits + prior * base) / (recent + prior)
        # Held-out record: origin s (a published row where the rule could forecast) is scored on the
        # change ending at s + h, so at row i it covers s <= i − h.
        outcome, usable = origin_outcomes(values, satisfied, horizon, enough_history)
        gain = brier(base, outcome) - brier(drift, outcome)
        record = held_out_sums(gain, usable, horizon, periods_per_year)
        return cls(horizon, enough_history, counts, base, drift, (recent + prior) / horizon, record)

    def held_out(self, i: int) -> HeldOutRecord:
        return held_out_record(self.record[:, i], self.horizon)

    def drivers(self, i: int, question: BoundQuestion, required: float) -> tuple[float, list[Driver]]:
        """Base rate and the (gated) drift as known at row i."""
        check_history(bool(self.enough_history[i]), int(self.known_changes[i]), self.horizon, question)
        record = self.held_out(i)
        base_rate, drift, independent = float(self.base[i]), float(self.drift[i]), float(self.drift_changes[i])
        claim = f"'{question.comparator} {required:+.4g}'"
        return base_rate, [drift_driver(
            drift, base_rate, "the base rate", independent, record.passed,
            hypothesis=(f"the share of {question.series_id}'s {self.horizon}-period changes satisfying {claim} has "
                        f"drifted from its whole-history base rate {base_rate:.3f}: recently it is {drift:.3f}"),
            record_words=record.words())]


def check_history(enough: bool, known_changes: int, horizon: int, question: BoundQuestion) -> None:
    """Rules v3 and v4 forecast only from at least max(MIN_HISTORY, h) visible h-period changes."""
    if not enough:
        raise ForecastInputError(
            f"{question.series_id}: {known_changes} visible {horizon}-period changes; the driver "
            f"rule needs at least {max(MIN_HISTORY, horizon)} (one horizon's worth, and {MIN_HISTORY})")


def drift_driver(drift: float, anchor: float, anchor_name: str, independent: float, passed: bool, *,
                 hypothesis: str, record_words: str) -> Driver:
    """The "base-rate drift" driver of rules v3 and v4: the drifted share as a log-odds shift from
    the rate it was shrunk toward, counting (weight 1) only when its held-out record passed."""
    weight = 1.0 if passed else 0.0
    return Driver(
        name=DRIFT_DRIVER, weight=weight, effect=float(logit(drift) - logit(anchor)),
        # sampling sd of the drifted share's log-odds, from the independent changes behind it
        effect_sd=1.0 / math.sqrt(independent * drift * (1.0 - drift)),
        hypothesis=hypothesis,
        rationale=(f"share of the visible changes with half-life {DRIFT_HALF_LIFE_YEARS:g} years, shrunk toward "
                   f"{anchor_name} by {DRIFT_PRIOR_CHANGES:g} changes' worth (about {independent:.0f} independent "
                   f"changes behind it); {record_words} — weight {weight:g}"))


T = TypeVar("T")
RECENT_HISTORIES = 4  # question shapes a rule keeps: a daily horizon in business days moves by one around holidays


def recently_computed(entries: list[tuple[Any, T]], matches: Callable[[Any], bool], key: Any,
                      compute: Callable[[], T]) -> T:
    """The value in `entries` (most recently used first) whose key `matches`, else `compute()` stored under `key`;
    at most RECENT_HISTORIES are kept (a fixed-threshold backtest asks a new shape at every origin)."""
    for index, (known, value) in enumerate(entries):
        if matches(known):
            entries.insert(0, entries.pop(index))
            return value
    value = compute()
    entries.insert(0, (key, value))
    del entries[RECENT_HISTORIES:]
    return value


class DriftRule:
    """Rule v3 on one series: `rule(i, question)` answers as of row i, from rows up to i only. The
    histories of the last change questions asked are kept, so a backtest whose origins all ask the same
    one (h periods ahead against the origin's value) computes it once."""

    def __init__(self, view: SeriesView, frequency: str):
        self.view, self.frequency = view, frequency
        self._histories: list[tuple[tuple, DriftHistory]] = []

    def __call__(self, i: int, question: BoundQuestion) -> tuple[float, list[Driver]]:
        change = change_question(self.view.upto(i), question, _own_periods(self.frequency))
        key = (change.horizon, question.comparator, change.required)
        history = recently_computed(self._histories, key.__eq__, key, lambda: DriftHistory.of(
            self.view.values, *key, PERIODS_PER_YEAR.get(self.frequency, 12.0)))
        return history.drivers(change.last_index, question, change.required)


def drivers_for(view: SeriesView, question: BoundQuestion, frequency: str) -> tuple[float, list[Driver]]:
    """Rule v3 (RULE_VERSION): base rate and the gated drift for `question` from the rows visible at issue."""
    return DriftRule(view, frequency)(len(view.values) - 1, question)


def legacy_drivers_for(view: SeriesView, question: BoundQuestion) -> tuple[float, list[Driver]]:
    """Rule v1 exactly as it bound forecasts before issue 11 (see the module docstring)."""
    change = change_question(view, question, lambda later, earlier: round(
        (later - earlier).days / float(np.median(np.diff(view.dates).astype(np.int64)))))
    h = change.horizon
    satisfied = satisfied_changes(view.values, h, question.comparator, change.required)
    satisfied = satisfied[~np.isnan(satisfied)]
    if len(satisfied) < MIN_HISTORY:
        raise ForecastInputError(f"{question.series_id}: too little history for a {h}-period horizon")
    base_rate = float(_smoothed_rate(satisfied.sum(), len(satisfied)))
    drivers = []
    for name, window, weight in LEGACY_WINDOWS:
        recent = satisfied[-window:]
        rate = float(_smoothed_rate(recent.sum(), len(recent)))
        drivers.append(Driver(
            name=name,
            hypothesis=(f"{question.series_id}'s {h}-period changes over the last {len(recent)} periods "
                        f"keep satisfying '{question.comparator} {change.required:+.4g}' at their recent rate"),
            effect=float(logit(rate) - logit(base_rate)),
            effect_sd=1.0 / math.sqrt(len(recent) * rate * (1.0 - rate)),
            weight=weight,
            rationale=(f"{int(recent.sum())} of the last {len(recent)} changes satisfied it, against "
                       f"{int(satisfied.sum())} of {len(satisfied)} over the whole history"),
        ))
    return base_rate, drivers
