"""The binding lane's configured questions (FC-4/5).

A configured question names a series, a comparator, and either a fixed threshold or a reference
observation; its target observation and deadline are explicit dates, or derived at issue:

- `target_date` omitted: the period after the last published observation in the vintage visible at
  issue (monthly and quarterly series).
- `reference: previous`: the period just before the target (month-over-month questions).
- `deadline` omitted: `deadline_days` days after the target period ends, 00:00 UTC.

A question whose target is already published at issue is refused: that would not be a forecast.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from forum_atlas.forecasting.binding import BindingError, BoundQuestion
from forum_atlas.series.parsing import Observation
from forum_atlas.series.registry import SeriesRegistry

_MONTHS_PER_PERIOD = {"monthly": 1, "quarterly": 3, "annual": 12}


class LaneQuestion(BaseModel):
    """One configured question of the binding lane."""

    key: str = Field(min_length=1, description="stable id; one bound forecast per key and target date")
    series_id: str = Field(description="a registered FRED id (`atlas series registry`), e.g. UNRATE, DGS10")
    comparator: Literal[">", ">=", "<", "<="] = Field(description="the event: the observation compared with the "
                                                                 "threshold or reference")
    threshold: float | None = Field(default=None, description="fixed threshold (or give reference)")
    reference: Literal["previous"] | date | None = Field(
        default=None, description="'previous' period or an observation date to compare against")
    target_date: date | None = Field(default=None, description="observation date; empty = next unpublished period")
    deadline: datetime | None = Field(default=None, description="resolve after this instant (UTC)")
    deadline_days: int = Field(default=45, ge=1, le=3650, description="used when deadline is empty")
    confidence_target: float = Field(default=0.9, gt=0, lt=1, description=">= 0.9 draws 10,000 samples")


def shift_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    return date(index // 12, index % 12 + 1, 1)


def _period_months(series_id: str, frequency: str) -> int:
    if frequency not in _MONTHS_PER_PERIOD:
        raise BindingError(f"{series_id} is {frequency}: give target_date, reference and deadline explicitly")
    return _MONTHS_PER_PERIOD[frequency]


def period_end(target: date, series_id: str, frequency: str) -> date:
    """The first day after the target's period (a month, quarter or year; a day for other frequencies)."""
    if frequency in _MONTHS_PER_PERIOD:
        return shift_months(target, _period_months(series_id, frequency))
    return target + timedelta(days=1)


def worth_fetching(spec: LaneQuestion, target: date, bound: bool, frequency: str, now: datetime) -> bool:
    """Whether a new vintage could change what the lane binds for a question whose target on the stored data is
    `target`: it is not bound yet (bind it on the freshest data), or it is bound to a derived target whose period
    has ended, so a new vintage may have published it and opened the next one. A question already bound to its
    explicit target, or to a period still running, needs no fetch: nothing published since can bind anything."""
    if not bound:
        return True
    return spec.target_date is None and now.date() >= period_end(target, spec.series_id, frequency)


def series_frequency(spec: LaneQuestion, registry: SeriesRegistry) -> str:
    """The frequency of the question's series; an unregistered series id is a BindingError that lists
    the registered ones."""
    try:
        return registry.info(spec.series_id).frequency
    except ValueError as exc:
        raise BindingError(f"question {spec.key!r}: {exc}") from exc


def bind_question(spec: LaneQuestion, visible: Sequence[Observation], issued_at: datetime,
                  registry: SeriesRegistry) -> BoundQuestion:
    """Turn a configured question into a validated binding, given the observations visible at issue."""
    frequency = series_frequency(spec, registry)
    published = [o for o in visible if o.value is not None]
    target = spec.target_date
    if target is None:
        if not published:
            raise BindingError(f"question {spec.key!r}: no published observation of {spec.series_id} at issue")
        target = shift_months(published[-1].observation_date, _period_months(spec.series_id, frequency))
    reference: date | None
    if spec.reference == "previous":
        reference = shift_months(target, -_period_months(spec.series_id, frequency))
    else:
        reference = spec.reference  # a date or None
    deadline = spec.deadline
    if deadline is None:
        deadline = datetime.combine(period_end(target, spec.series_id, frequency) + timedelta(days=spec.deadline_days),
                                    time(0), tzinfo=timezone.utc)
    question = BoundQuestion(key=spec.key, series_id=spec.series_id, comparator=spec.comparator,
                             target_date=target, deadline=deadline, threshold=spec.threshold,
                             reference_date=reference)
    question.validate(issued_at, registry)
    if any(o.observation_date == target for o in published):
        raise BindingError(f"question {spec.key!r}: {spec.series_id} {target} is already published at issue; "
                           "that would not be a forecast")
    return question


def load_questions(path: Path) -> list[LaneQuestion]:
    """A JSON file: {"questions": [LaneQuestion, ...]}."""
    data = json.loads(path.read_text(encoding="utf-8"))
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON object with a 'questions' list")
    return [LaneQuestion.model_validate(item) for item in items]
