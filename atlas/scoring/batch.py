"""Score many bound forecasts against one vintage per series, as whole arrays (no per-row loop).

A vintage can only settle a question it was fetched to answer: one fetched at or before the question's
deadline that lacks the date leaves the question **pending: waiting for data** (no score row), because
a night whose fetch failed scores on an older vintage, and "we could not reach FRED" is not "FRED will
never publish it". Only a vintage fetched after the deadline that still lacks the date (the 2025-10
gap) makes it unresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import pandas as pd

from forum_atlas.scoring.resolution import UNRESOLVED, resolve

SCORE_ROW_COLUMNS = [
    "forecast_id", "scoring_version", "vintage_id", "status", "outcome", "probability", "brier",
    "target_date", "target_present", "target_value", "reference_date", "reference_present", "reference_value",
    "reason",
]
BINDING_COLUMNS = ["forecast_id", "probability", "series_id", "comparator", "threshold", "reference_date",
                   "target_date", "deadline"]


@dataclass(frozen=True)
class VintageData:
    vintage_id: int
    series_id: str
    label: str
    fetched_at: datetime  # timezone-aware
    dates: np.ndarray   # datetime64[D], ascending
    values: np.ndarray  # float64, NaN where the row is empty

    @property
    def last_date(self) -> date:
        return pd.Timestamp(self.dates[-1]).date()


def _days(column: pd.Series) -> np.ndarray:
    return pd.to_datetime(column).to_numpy(dtype="datetime64[D]")


def _lookup(vintage: VintageData, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    position = np.searchsorted(vintage.dates, wanted)
    inside = position < len(vintage.dates)
    present = np.zeros(len(wanted), dtype=bool)
    present[inside] = vintage.dates[position[inside]] == wanted[inside]
    value = np.full(len(wanted), np.nan)
    value[present] = vintage.values[position[present]]
    return present, value


def _fetched_after(vintage: VintageData, deadlines: pd.Series) -> np.ndarray:
    """Whether the vintage was fetched after each deadline (only then may its gaps be final)."""
    return (pd.to_datetime(deadlines, utc=True) < pd.Timestamp(vintage.fetched_at)).to_numpy()


def score_bindings(bindings: pd.DataFrame, vintages: Mapping[str, VintageData], scoring_version: str
                   ) -> pd.DataFrame:
    """One score row per binding whose series has a vintage in `vintages` that settles it; the others are
    left out: no vintage of their series, or one fetched by their deadline that lacks a date they need
    (they stay pending, waiting for data)."""
    missing = [c for c in BINDING_COLUMNS if c not in bindings.columns]
    if missing:
        raise ValueError(f"bindings lack columns {missing}")
    frames = []
    for series_id, group in bindings.groupby("series_id", sort=True):
        vintage = vintages.get(series_id)
        if vintage is None:
            continue
        target_dates = _days(group["target_date"])
        target_present, target_value = _lookup(vintage, target_dates)
        uses_reference = group["reference_date"].notna().to_numpy()
        reference_dates = _days(group["reference_date"])  # NaT for threshold questions: never found
        found, observed = _lookup(vintage, reference_dates)
        reference_present = found & uses_reference
        reference_value = np.where(uses_reference, observed, group["threshold"].to_numpy(dtype=np.float64))
        resolutions = resolve(
            group["comparator"].to_numpy(dtype=object), target_value, reference_value,
            target_present=target_present, reference_present=reference_present, target_dates=target_dates,
            reference_dates=reference_dates, vintage_label=f"{vintage.label} (#{vintage.vintage_id})",
            vintage_last_date=vintage.last_date,
        )
        resolved = resolutions.outcome != UNRESOLVED
        probability = group["probability"].to_numpy(dtype=np.float64)
        outcome = pd.array(np.where(resolved, resolutions.outcome, 0), dtype="Int16")
        outcome[~resolved] = pd.NA
        brier = np.where(resolved, (probability - resolutions.outcome) ** 2, np.nan)
        reference_flag = pd.array(reference_present, dtype="boolean")
        reference_flag[~uses_reference] = pd.NA  # no reference row for a fixed threshold
        settled = resolved | _fetched_after(vintage, group["deadline"])
        frames.append(pd.DataFrame({
            "forecast_id": group["forecast_id"].to_numpy(),
            "scoring_version": scoring_version,
            "vintage_id": vintage.vintage_id,
            "status": np.where(resolved, "resolved", "unresolvable"),
            "outcome": outcome,
            "probability": probability,
            "brier": brier,
            "target_date": target_dates,
            "target_present": target_present,
            "target_value": target_value,
            "reference_date": reference_dates,
            "reference_present": reference_flag,
            "reference_value": reference_value,
            "reason": resolutions.reason,
        })[settled])
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SCORE_ROW_COLUMNS})
    return pd.concat(frames, ignore_index=True)[SCORE_ROW_COLUMNS]


def reclassified(previous: pd.DataFrame, new_scores: pd.DataFrame) -> list[dict]:
    """The forecasts a night with a failed fetch mislabelled — current score unresolvable on a vintage fetched
    by their deadline (`previous`: current scores with `vintage_fetched_at` and `deadline`) — that
    `new_scores` settles on a vintage that could: each with what it was, what it is now, and why."""
    was_unresolvable = previous["status"] == "unresolvable"
    fetched_by_deadline = (pd.to_datetime(previous["vintage_fetched_at"], utc=True)
                           <= pd.to_datetime(previous["deadline"], utc=True))
    mislabelled = previous[was_unresolvable & fetched_by_deadline]
    now = mislabelled.merge(new_scores[["forecast_id", "vintage_id", "status"]], on="forecast_id",
                            suffixes=("_was", ""))
    return [{"forecast_id": int(row.forecast_id), "was": "unresolvable", "was_vintage_id": int(row.vintage_id_was),
             "now": row.status, "vintage_id": int(row.vintage_id),
             "why": f"vintage #{row.vintage_id_was} was fetched at {pd.Timestamp(row.vintage_fetched_at).isoformat()}, "
                    f"by the deadline {pd.Timestamp(row.deadline).isoformat()}: its missing date meant the data had "
                    "not been fetched yet, not that it will never be published; "
                    f"vintage #{row.vintage_id} settles it as {row.status}"}
            for row in now.itertuples()]
