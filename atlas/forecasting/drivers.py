"""The documented deterministic driver rule for bound (series) questions.

Everything comes from the vintage the forecaster could see at issue; empty observations are
dropped, never filled.

1. Horizon h: the number of periods from the last published observation to the target
   (calendar days divided by the series' median spacing, at least 1). The question becomes
   "will the h-period change Δ satisfy Δ <cmp> c?", with c = threshold − last value, or
   reference value − last value (reference already published), or c = 0 over the periods between
   reference and target (both still in the future).
2. Base rate (climatology): the share of historical h-period changes that satisfied the question,
   with a +0.5/+1 continuity correction so it is never exactly 0 or 1.
3. Drivers, each an effect on the log-odds relative to the base rate, with the delta-method
   standard error of a logit proportion, 1/sqrt(n·p·(1−p)), as its spread:
   - "recent momentum": the same share over the last 6 changes, weight 0.5;
   - "medium-term regime": the same share over the last 24 changes, weight 0.3.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date

import numpy as np

from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError
from forum_atlas.scoring.resolution import COMPARATORS
from forum_atlas.series.parsing import Observation

RULE_VERSION = "series-climatology-momentum-v1"
WINDOWS = (("recent momentum", 6, 0.5), ("medium-term regime", 24, 0.3))
MIN_HISTORY = 8


def _smoothed_rate(hits: int, n: int) -> float:
    return (hits + 0.5) / (n + 1.0)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _steps(later: date, earlier: date, spacing_days: float) -> int:
    return max(1, round((later - earlier).days / spacing_days))


def series_drivers(observations: Sequence[Observation], question: BoundQuestion) -> tuple[float, list[Driver]]:
    """Base rate and drivers for `question` from the observations visible at issue."""
    dates = np.array([o.observation_date for o in observations], dtype="datetime64[D]")
    values = np.array([np.nan if o.value is None else o.value for o in observations], dtype=np.float64)
    known = ~np.isnan(values)
    if known.sum() < MIN_HISTORY:
        raise ForecastInputError(f"{question.series_id}: only {int(known.sum())} published observations at issue; "
                                 f"the driver rule needs at least {MIN_HISTORY}")
    spacing = float(np.median(np.diff(dates).astype(np.int64)))
    last_index = int(np.flatnonzero(known)[-1])
    last_date = dates[last_index].astype(object)
    last_value = float(values[last_index])
    if question.reference_date is not None and question.reference_date <= last_date:
        matches = np.flatnonzero(dates == np.datetime64(question.reference_date))
        if not len(matches) or not known[matches[0]]:
            raise ForecastInputError(f"{question.series_id}: reference observation {question.reference_date} is not "
                                     "published in the vintage visible at issue")
        required = float(values[matches[0]]) - last_value
        horizon = _steps(question.target_date, last_date, spacing)
    elif question.reference_date is not None:
        required = 0.0
        horizon = _steps(question.target_date, question.reference_date, spacing)
    else:
        required = float(question.threshold) - last_value
        horizon = _steps(question.target_date, last_date, spacing)
    # h-period changes over the whole history; a pair with an empty end is dropped, not filled.
    changes = values[horizon:] - values[:-horizon] if horizon < len(values) else np.array([])
    changes = changes[~np.isnan(changes)]
    if len(changes) < MIN_HISTORY:
        raise ForecastInputError(f"{question.series_id}: too little history for a {horizon}-period horizon")
    satisfied = COMPARATORS[question.comparator](changes, required)
    base_rate = _smoothed_rate(int(satisfied.sum()), len(satisfied))
    drivers = []
    for name, window, weight in WINDOWS:
        recent = satisfied[-window:]
        rate = _smoothed_rate(int(recent.sum()), len(recent))
        drivers.append(Driver(
            name=name,
            hypothesis=(f"{question.series_id}'s {horizon}-period changes over the last {len(recent)} periods "
                        f"keep satisfying '{question.comparator} {required:+.4g}' at their recent rate"),
            effect=_logit(rate) - _logit(base_rate),
            effect_sd=1.0 / math.sqrt(len(recent) * rate * (1.0 - rate)),
            weight=weight,
            rationale=(f"{int(recent.sum())} of the last {len(recent)} changes satisfied it, against "
                       f"{int(satisfied.sum())} of {len(satisfied)} over the whole history"),
        ))
    return base_rate, drivers
