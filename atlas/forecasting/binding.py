"""A bound question (FC-4): a named public series, an explicit comparator against a fixed threshold
or against another observation of the same series, the target observation and a deadline.

    "Will CPIAUCSL for 2025-03 be > its 2025-02 value?"  -> reference_date=2025-02-01
    "Will UNRATE for 2025-06 be >= 4.5?"                  -> threshold=4.5
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import date, datetime

from forum_atlas.scoring.resolution import check_comparator
from forum_atlas.series.registry import series_info


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

    def validate(self, issued_at: datetime) -> None:
        if not self.key.strip():
            raise BindingError("a bound question needs a non-empty key")
        try:
            series_info(self.series_id)
            check_comparator(self.comparator)
        except ValueError as exc:
            raise BindingError(f"question {self.key!r}: {exc}") from exc
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
        period = self.target_date.strftime("%Y-%m")
        if self.reference_date is not None:
            against = f"its {self.reference_date.strftime('%Y-%m')} value"
        else:
            against = f"{self.threshold:g}"
        return (f"Will {self.series_id} for {period} be {self.comparator} {against}? "
                f"(resolved after {self.deadline.date()} on the then-latest vintage)")

    def as_dict(self) -> dict:
        data = asdict(self)
        return {k: (v.isoformat() if isinstance(v, (date, datetime)) else v) for k, v in data.items()}
