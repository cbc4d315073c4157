"""Loading FRED files in tests as `atlas series load` does: parse them all, then store them in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forum_atlas.series.connectors.file import read_series_files
from forum_atlas.series.coverage import check_coverage
from forum_atlas.store.db import Database
from forum_atlas.store.forecasts import load_vintages


def load_series_files(db: Database, paths: Sequence[Path | str], *, partial: bool = False,
                      **reading: Any) -> list[dict[str, Any]]:
    """`reading`: label=, fetched_at= (as for read_series_files)."""
    return load_vintages(db, read_series_files(paths, **reading), check_coverage=check_coverage, partial=partial)
