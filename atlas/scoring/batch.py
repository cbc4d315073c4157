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

from forum_atlas.scoring.resolution import UNRESOLVED, Resolutions, resolve
from forum_atlas.scoring.versions import ScoringRule

SCORE_ROW_COLUMNS = (
    "forecast_id", "scoring_version", "vintage_id", "status", "outcome", "probability", "brier",
    "target_date", "target_present", "target_value", "reference_date", "reference_present", "reference_value",
    "reason", "log_score", "deadline_vintage_id", "deadline_outcome",
)
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


@dataclass(frozen=True)
class _Read:
    """One group of bindings read against one vintage and resolved there."""
    target_dates: np.ndarray
    target_present: np.ndarray
    target_value: np.ndarray
    reference_dates: np.ndarray
    uses_reference: np.ndarray
    reference_present: np.ndarray
    reference_value: np.ndarray
    resolutions: Resolutions


def _read(vintage: VintageData, group: pd.DataFrame) -> _Read:
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
    return _Read(target_dates, target_present, target_value, reference_dates, uses_reference, reference_present,
                 reference_value, resolutions)


def _int_or_na(values: np.ndarray, known: np.ndarray, dtype: str) -> pd.arrays.IntegerArray:
    array = pd.array(np.where(known, values, 0), dtype=dtype)
    array[~known] = pd.NA
    return array


def _utc_microseconds(instants: pd.Series) -> np.ndarray:
    """Instants as int64 microseconds since the epoch (UTC): compared as numbers, never as Timestamp objects."""
    return pd.DatetimeIndex(pd.to_datetime(instants, utc=True)).as_unit("us").asi8


def vintages_current_at(catalogue: pd.DataFrame, series_ids: pd.Series, instants: pd.Series) -> pd.Series:
    """For each (series, instant), the id of the newest full vintage of that series fetched by the instant
    (latest fetched_at, then highest id), or NA when none was. `catalogue`: vintage_id, series_id, fetched_at
    of the full vintages."""
    chosen = pd.Series(pd.NA, index=series_ids.index, dtype="Int64")
    when = _utc_microseconds(instants)
    for series_id, rows in catalogue.groupby("series_id", sort=False):
        ordered = rows.assign(fetched_at=_utc_microseconds(rows["fetched_at"])).sort_values(["fetched_at", "vintage_id"])
        mine = (series_ids == series_id).to_numpy()
        position = np.searchsorted(ordered["fetched_at"].to_numpy(), when[mine], side="right") - 1
        ids = ordered["vintage_id"].to_numpy()[np.maximum(position, 0)]
        chosen[mine] = _int_or_na(ids, position >= 0, "Int64")
    return chosen


def _deadline_outcomes(bindings: pd.DataFrame, vintages: Mapping[int, VintageData]) -> pd.arrays.IntegerArray:
    """The outcome each binding had on its deadline vintage (column deadline_vintage_id), NA where it had none
    or that vintage lacked a date it needs."""
    outcome = pd.array([pd.NA] * len(bindings), dtype="Int16")
    ids = bindings["deadline_vintage_id"]
    for vintage_id in ids.dropna().unique():
        rows = (ids == vintage_id).fillna(False).to_numpy()
        read = _read(vintages[int(vintage_id)], bindings[rows])
        outcome[rows] = _int_or_na(read.resolutions.outcome, read.resolutions.outcome != UNRESOLVED, "Int16")
    return outcome


def score_bindings(bindings: pd.DataFrame, vintages: Mapping[str, VintageData], rule: ScoringRule,
                   deadline_vintages: Mapping[int, VintageData] | None = None) -> pd.DataFrame:
    """One score row under `rule` per binding whose series has a vintage in `vintages` that settles it; the
    others are left out: no vintage of their series, or one fetched by their deadline that lacks a date they
    need (they stay pending, waiting for data). A rule that records the deadline vintage reads it from the
    bindings' deadline_vintage_id column and `deadline_vintages`."""
    missing = [c for c in BINDING_COLUMNS if c not in bindings.columns]
    if missing:
        raise ValueError(f"bindings lack columns {missing}")
    if rule.records_deadline_vintage and ("deadline_vintage_id" not in bindings.columns or deadline_vintages is None):
        raise ValueError(f"{rule.version} records each binding's deadline vintage: give deadline_vintage_id "
                         "and those vintages")
    frames = []
    for series_id, group in bindings.groupby("series_id", sort=True):
        vintage = vintages.get(series_id)
        if vintage is None:
            continue
        read = _read(vintage, group)
        outcomes = read.resolutions.outcome
        resolved = outcomes != UNRESOLVED
        probability = group["probability"].to_numpy(dtype=np.float64)
        score = np.where(resolved, rule.score(probability, outcomes), np.nan)
        reference_flag = pd.array(read.reference_present, dtype="boolean")
        reference_flag[~read.uses_reference] = pd.NA  # no reference row for a fixed threshold
        settled = resolved | _fetched_after(vintage, group["deadline"])
        no_score = np.full(len(group), np.nan)
        frame = pd.DataFrame({
            "forecast_id": group["forecast_id"].to_numpy(),
            "scoring_version": rule.version,
            "vintage_id": vintage.vintage_id,
            "status": np.where(resolved, "resolved", "unresolvable"),
            "outcome": _int_or_na(outcomes, resolved, "Int16"),
            "probability": probability,
            "brier": score if rule.column == "brier" else no_score,
            "target_date": read.target_dates,
            "target_present": read.target_present,
            "target_value": read.target_value,
            "reference_date": read.reference_dates,
            "reference_present": reference_flag,
            "reference_value": read.reference_value,
            "reason": read.resolutions.reason,
            "log_score": score if rule.column == "log_score" else no_score,
            "deadline_vintage_id": (group["deadline_vintage_id"].astype("Int64").array
                                    if rule.records_deadline_vintage else pd.array([pd.NA] * len(group), "Int64")),
            "deadline_outcome": (_deadline_outcomes(group, deadline_vintages) if rule.records_deadline_vintage
                                 else pd.array([pd.NA] * len(group), dtype="Int16")),
        })
        frames.append(frame[settled])
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SCORE_ROW_COLUMNS})
    return pd.concat(frames, ignore_index=True)[list(SCORE_ROW_COLUMNS)]


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
