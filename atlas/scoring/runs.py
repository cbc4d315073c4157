"""A scoring run's plain parts: the request checked, the due bindings a nightly still has to resolve, and what the
run counted. The reads and writes around them, in the caller's transaction, are tasks/scoring.py's `run_scoring`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import pandas as pd

from forum_atlas.scoring.batch import VintageData
from forum_atlas.scoring.quality import QualityReport

Mode = Literal["nightly", "backfill"]


@dataclass
class ScoringRun:
    mode: Mode
    as_of: datetime
    scoring_version: str
    due: int = 0
    scored: int = 0
    inserted: int = 0
    reproduced: int = 0
    resolved: int = 0
    unresolvable: int = 0
    waiting_for_data: int = 0   # due, but no vintage fetched after the deadline has the dates yet
    reclassified: int = 0       # mislabelled unresolvable by a night whose fetch failed, settled now
    vintages: dict[str, int] = field(default_factory=dict)  # series -> vintage_id used
    quality: QualityReport | None = None

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "quality"}
        data["as_of"] = self.as_of.isoformat()
        data["quality_checks"] = self.quality.checks if self.quality else []
        return data


class ScoringInputError(ValueError):
    """A scoring request that cannot be honoured as given; nothing is written."""


def checked_as_of(as_of: datetime | None, deadline_from: datetime | None, deadline_to: datetime | None) -> datetime:
    """The run's as_of (default: now), once the request is one that can be honoured."""
    as_of = as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        raise ScoringInputError("as_of must carry a timezone")
    if deadline_from and deadline_to and deadline_to <= deadline_from:
        raise ScoringInputError(f"empty range: {deadline_from.isoformat()} .. {deadline_to.isoformat()}")
    return as_of


def check_chosen_vintage(vintage_id: int, chosen: Mapping[str, Any] | None) -> None:
    """A backfill on one vintage: it must exist and be full."""
    if chosen is None:
        raise ScoringInputError(f"vintage {vintage_id} does not exist")
    if chosen["partial"]:
        raise ScoringInputError(f"vintage {vintage_id} ({chosen['series_id']} {chosen['label']}) is partial: it "
                                "covers less than the vintage before it and is never used for resolution")


def unsettled(due: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """The due bindings the nightly run still has to resolve, given the version's current scores: a resolved one
    is never re-resolved."""
    settled = set(current.loc[current["status"] == "resolved", "forecast_id"])
    return due[~due["forecast_id"].isin(settled)]


def count_scores(run: ScoringRun, vintages: Mapping[str, VintageData], scores: pd.DataFrame) -> None:
    """What the run scored, on which vintages: due bindings without a row are waiting for data."""
    run.vintages = {s: v.vintage_id for s, v in vintages.items()}
    run.scored = len(scores)
    run.waiting_for_data = run.due - run.scored
    run.resolved = int((scores["status"] == "resolved").sum()) if len(scores) else 0
    run.unresolvable = run.scored - run.resolved
