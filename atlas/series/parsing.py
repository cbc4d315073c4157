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
