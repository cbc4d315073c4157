"""A bound question (FC-4): a named public series, an explicit comparator against a fixed threshold
or against another observation of the same series, the target observation and a deadline.

    "Will CPIAUCSL for 2025-03 be > its 2025-02 value?"  -> reference_date=2025-02-01
    "Will UNRATE for 2025-06 be >= 4.5?"                  -> threshold=4.5

Targets must be able to exist: a target or reference date that is not an observation date of the
series' frequency (a Saturday for a business-daily series, the 15th for a monthly one) is refused
— never moved to a neighbouring date. Holidays are weekdays, so they bind; an empty holiday row
then resolves as unresolvable, never filled.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import date, datetime

from forum_atlas.scoring.resolution import check_comparator
from forum_atlas.series.parsing import observation_date_problem
from forum_atlas.series.registry import SeriesRegistry


class BindingError(ValueError):
    """A question that cannot be bound as given; nothing is written."""


@dataclass(frozen=True)
class BoundQuestion:
    key: str                      # stable id of the configured question
    series_id: str
    comparator: str
    target_date: date
    deadline: datetime
    threshold: float | None = None
    reference_date: date | None = None

    def validate(self, issued_at: datetime, registry: SeriesRegistry) -> None:
        if not self.key.strip():
            raise BindingError("a bound question needs a non-empty key")
        try:
            frequency = registry.info(self.series_id).frequency
            check_comparator(self.comparator)
        except ValueError as exc:
            raise BindingError(f"question {self.key!r}: {exc}") from exc
        for role, day in (("target", self.target_date), ("reference", self.reference_date)):
            problem = None if day is None else observation_date_problem(day, frequency)
            if problem:
                raise BindingError(f"question {self.key!r}: {role} {problem}; nothing was bound")
        if (self.threshold is None) == (self.reference_date is None):
            raise BindingError(f"question {self.key!r}: give exactly one of threshold or reference_date")
        if self.threshold is not None and not (isinstance(self.threshold, (int, float))
                                               and math.isfinite(self.threshold)):
            raise BindingError(f"question {self.key!r}: threshold must be a finite number, got {self.threshold!r}")
        if self.reference_date is not None and self.reference_date >= self.target_date:
            raise BindingError(f"question {self.key!r}: reference_date {self.reference_date} must precede "
                               f"target_date {self.target_date}")
        if self.deadline.tzinfo is None or issued_at.tzinfo is None:
            raise BindingError(f"question {self.key!r}: deadline and issue time must carry a timezone")
        if self.deadline <= issued_at:
            raise BindingError(f"question {self.key!r}: deadline {self.deadline.isoformat()} is not after the "
                               f"issue time {issued_at.isoformat()}")
        if self.deadline.date() <= self.target_date:
            raise BindingError(f"question {self.key!r}: deadline {self.deadline.date()} must come after the "
                               f"target observation date {self.target_date} (it cannot be observed earlier)")

    @property
    def text(self) -> str:
        # a period starting on the 1st is named by its month; a daily observation by its date
        period = self.target_date.strftime("%Y-%m") if self.target_date.day == 1 else self.target_date.isoformat()
        if self.reference_date is not None:
            against = f"its {self.reference_date.strftime('%Y-%m')} value"
        else:
            against = f"{self.threshold:g}"
        return (f"Will {self.series_id} for {period} be {self.comparator} {against}? "
                f"(resolved after {self.deadline.date()} on the then-latest vintage)")

    def as_dict(self) -> dict:
        data = asdict(self)
        return {k: (v.isoformat() if isinstance(v, (date, datetime)) else v) for k, v in data.items()}
