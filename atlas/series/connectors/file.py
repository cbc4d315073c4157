"""Reads FRED CSV exports from disk (both export formats).

The vintage label and download time come from the file name when it follows the
`<ID>__fred_vintage_<YYYY-MM>.csv` convention (the download month; `fetched_at` is then taken as
the first instant of that month, UTC — the file does not say the day), unless given explicitly.
A file's modification time is never used: copying or touching a file would make it the newest
vintage. A name without a download month and no explicit `fetched_at` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from forum_atlas.series.connectors.base import FetchedVintage
from forum_atlas.series.parsing import parse_fred_csv

_VINTAGE_IN_NAME = re.compile(r"__fred_vintage_(\d{4})-(\d{2})")


def vintage_from_name(path: Path) -> tuple[str, datetime] | None:
    match = _VINTAGE_IN_NAME.search(path.name)
    if not match:
        return None
    year, month = int(match.group(1)), int(match.group(2))
    return f"{year:04d}-{month:02d}", datetime(year, month, 1, tzinfo=timezone.utc)


class MissingFetchTimeError(ValueError):
    """The file name carries no download month and no `fetched_at` was given."""


class FileConnector:
    name = "file"

    def __init__(self, path: Path | str, *, label: str | None = None, fetched_at: datetime | None = None):
        self.path = Path(path)
        self.label = label
        self.fetched_at = fetched_at
        if fetched_at is not None and fetched_at.tzinfo is None:
            raise ValueError("fetched_at must carry a timezone (e.g. 2025-04-15T00:00:00+00:00)")

    def files_for(self, series_id: str) -> list[Path]:
        """The files for `series_id`: the file itself, or `<ID>__*.csv` in a directory, oldest first."""
        if self.path.is_dir():
            return sorted(self.path.glob(f"{series_id}__*.csv"))
        return [self.path]

    def read(self, path: Path) -> FetchedVintage:
        if not path.is_file():
            raise FileNotFoundError(f"series file not found: {path}")
        parsed = parse_fred_csv(path.read_text(encoding="utf-8"), source=str(path))
        named = vintage_from_name(path)
        label = self.label or (named[0] if named else path.stem)
        fetched_at = self.fetched_at or (named[1] if named else None)
        if fetched_at is None:
            raise MissingFetchTimeError(
                f"{path}: the file name carries no download month (like <ID>__fred_vintage_YYYY-MM.csv), so "
                "when it was downloaded is unknown; pass --fetched-at (fetched_at=) with the download time — "
                "the file's modification time is not used; nothing was stored")
        return FetchedVintage(parsed, label, fetched_at, self.name, str(path.resolve()))

    def fetch(self, series_id: str) -> FetchedVintage:
        files = self.files_for(series_id)
        if not files:
            raise FileNotFoundError(f"no {series_id}__*.csv file in {self.path}")
        vintage = self.read(files[-1])
        if vintage.series_id != series_id:
            raise ValueError(f"{files[-1]} holds series {vintage.series_id}, not {series_id}")
        return vintage


def read_series_files(paths: Sequence[Path | str], *, label: str | None = None,
                      fetched_at: datetime | None = None) -> list[FetchedVintage]:
    """Parse every file of a load first: a garbage row or a file without a download time refuses the whole load
    before anything is stored."""
    return [FileConnector(p, label=label, fetched_at=fetched_at).read(Path(p)) for p in paths]
