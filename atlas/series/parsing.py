"""FRED CSV exports → observations, refusing anything that is not one.

Two formats exist: the current `observation_date,<ID>` export with an empty field for a missing
value, and the older `DATE,<ID>` export with `.` for a missing value. Both mean the same thing: the
period exists and has no published value. That is kept as `None` (never filled from a neighbour).
Anything else — a row that is not `date,number`, a date out of order or repeated, a literal NaN —
is garbage, and the whole file is refused with the line numbers, so nothing partial is stored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
from dataclasses import dataclass
from datetime import date

import numpy as np

MISSING_MARKERS = ("", ".")
_HEADER_DATE = {"observation_date": "new", "DATE": "old"}
_SERIES_ID = re.compile(r"^[A-Z0-9_]+$")
_MAX_REPORTED = 5


class SeriesFormatError(ValueError):
    """The file is not a clean FRED CSV export; `problems` lists (line number, what is wrong)."""

    def __init__(self, source: str, problems: list[tuple[int, str]]):
        shown = "; ".join(f"line {n}: {what}" for n, what in problems[:_MAX_REPORTED])
        more = f" (and {len(problems) - _MAX_REPORTED} more)" if len(problems) > _MAX_REPORTED else ""
        super().__init__(f"{source}: not a FRED CSV export — {shown}{more}; nothing was stored")
        self.source = source
        self.problems = problems


@dataclass(frozen=True)
class Observation:
    observation_date: date
    value: float | None  # None: the period is in the file with no published value


@dataclass(frozen=True)
class ParsedSeries:
    series_id: str
    file_format: str  # "new" (observation_date, empty = missing) or "old" (DATE, "." = missing)
    observations: tuple[Observation, ...]

    @property
    def content_hash(self) -> str:
        return observations_hash(self.observations)

    @property
    def missing_dates(self) -> list[date]:
        return [o.observation_date for o in self.observations if o.value is None]


def observations_hash(observations: tuple[Observation, ...] | list[Observation]) -> str:
    """Hash of the observations themselves (not of the file bytes), so the same data in the old and
    the new export format is the same vintage content."""
    digest = hashlib.sha256()
    for obs in observations:
        value = "" if obs.value is None else repr(float(obs.value))
        digest.update(f"{obs.observation_date.isoformat()},{value}\n".encode("ascii"))
    return digest.hexdigest()


def _parse_value(text: str) -> float | None:
    if text in MISSING_MARKERS:
        return None
    value = float(text)  # ValueError for garbage
    if not math.isfinite(value):
        raise ValueError(f"non-finite value {text!r}")
    return value


def parse_fred_csv(text: str, *, source: str = "<csv>") -> ParsedSeries:
    """Parse a whole FRED CSV export; raise SeriesFormatError listing every bad line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise SeriesFormatError(source, [(1, "empty file")])
    header = [cell.strip() for cell in rows[0]]
    if len(header) != 2 or header[0] not in _HEADER_DATE or not _SERIES_ID.match(header[1]):
        raise SeriesFormatError(
            source, [(1, f"header {rows[0]!r} is not 'observation_date,<SERIES_ID>' or 'DATE,<SERIES_ID>'")]
        )
    file_format = _HEADER_DATE[header[0]]
    problems: list[tuple[int, str]] = []
    observations: list[Observation] = []
    previous: date | None = None
    for line_no, row in enumerate(rows[1:], start=2):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a trailing blank line is not a row
        if len(row) != 2:
            problems.append((line_no, f"expected 2 fields, found {len(row)}: {row!r}"))
            continue
        date_text, value_text = row[0].strip(), row[1].strip()
        try:
            when = date.fromisoformat(date_text)
            if len(date_text) != 10:
                raise ValueError
        except ValueError:
            problems.append((line_no, f"{date_text!r} is not a YYYY-MM-DD date"))
            continue
        try:
            value = _parse_value(value_text)
        except ValueError:
            problems.append((line_no, f"{value_text!r} is neither a number nor a missing marker ('' or '.')"))
            continue
        if previous is not None and when <= previous:
            problems.append((line_no, f"{when} is not after the previous row's {previous}"))
            continue
        previous = when
        observations.append(Observation(when, value))
    if not observations and not problems:
        problems.append((2, "no observations"))
    if problems:
        raise SeriesFormatError(source, problems)
    return ParsedSeries(series_id=header[1], file_format=file_format, observations=tuple(observations))


# ---------------------------------------------------------------- frequencies and observation dates
#
# A FRED observation date is the first day of its period: any weekday for a (business-)daily series,
# the 1st of the month for monthly, the 1st of Jan/Apr/Jul/Oct for quarterly, 1 January for annual.
# Daily files list every weekday, holidays included (empty); weekends are not periods at all. So a
# horizon or a target counts the series' own periods: business days, months, quarters, years.
FREQUENCIES = ("daily", "weekly", "monthly", "quarterly", "annual")
_MONTHS_PER_PERIOD = {"monthly": 1, "quarterly": 3, "annual": 12}


def _month_index(day: date) -> int:
    return day.year * 12 + day.month - 1


def observation_date_problem(day: date, frequency: str) -> str | None:
    """Why `day` cannot be an observation date of a `frequency` series (None when it can)."""
    if frequency == "daily":
        return None if day.weekday() < 5 else f"{day} is a {day:%A}: a business-daily series has no weekend dates"
    if frequency == "weekly":
        return None  # FRED weekly series end on a series-specific weekday; only the stored dates say which
    months = _MONTHS_PER_PERIOD.get(frequency)
    if months is None:
        raise ValueError(f"unknown frequency {frequency!r}; expected one of {', '.join(FREQUENCIES)}")
    if day.day != 1 or (day.month - 1) % months:
        starts = {"monthly": "the 1st of a month", "quarterly": "1 January, April, July or October",
                  "annual": "1 January"}[frequency]
        return (f"{day} is not an observation date of a {frequency} series (FRED dates each period by its start: "
                f"{starts})")
    return None


def periods_between(earlier: date, later: date, frequency: str) -> int:
    """How many of the series' own periods `later` lies after `earlier` (both observation dates)."""
    if frequency == "daily":
        return int(np.busday_count(earlier, later))
    if frequency == "weekly":
        return (later - earlier).days // 7
    return (_month_index(later) - _month_index(earlier)) // _MONTHS_PER_PERIOD[frequency]


def infer_frequency(dates: np.ndarray) -> str:
    """The frequency of ascending observation dates (datetime64[D]), from their median spacing."""
    if len(dates) < 2:
        raise ValueError("need at least two observation dates to tell the frequency")
    spacing = float(np.median(np.diff(dates).astype(np.int64)))
    for frequency, upper in (("daily", 4), ("weekly", 10), ("monthly", 45), ("quarterly", 135)):
        if spacing <= upper:
            return frequency
    return "annual"


def parse_year_quarter_csv(text: str, column: str, *, source: str = "<csv>") -> ParsedSeries:
    """One column of a quarterly `year,quarter,...` table (the statsmodels macro data file) as a
    quarterly series dated, as FRED dates quarters, by the first day of the quarter."""
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    if not rows or not {"year", "quarter", column} <= set(rows[0]):
        known = ", ".join(c for c in (rows[0] if rows else {}) if c not in ("year", "quarter"))
        raise SeriesFormatError(source, [(1, f"expected columns year, quarter and {column!r}; value columns: {known}")])
    problems: list[tuple[int, str]] = []
    observations: list[Observation] = []
    for line_no, row in enumerate(rows, start=2):
        try:
            quarter = int(row["quarter"])
            if quarter not in (1, 2, 3, 4):
                raise ValueError
            when = date(int(float(row["year"])), 3 * quarter - 2, 1)
            value = _parse_value(row[column].strip())
        except (ValueError, TypeError):
            problems.append((line_no, f"year {row['year']!r}, quarter {row['quarter']!r}, value {row[column]!r}"))
            continue
        if observations and when <= observations[-1].observation_date:
            problems.append((line_no, f"{when} is not after the previous row's {observations[-1].observation_date}"))
            continue
        observations.append(Observation(when, value))
    if problems:
        raise SeriesFormatError(source, problems)
    return ParsedSeries(series_id=column.upper(), file_format="year-quarter", observations=tuple(observations))

