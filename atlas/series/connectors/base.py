"""What every series connector returns: one fetched set of observations, i.e. a vintage."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from forum_atlas.series.parsing import ParsedSeries


@dataclass(frozen=True)
class FetchedVintage:
    series: ParsedSeries
    label: str           # human label of the vintage, e.g. '2025-04'
    fetched_at: datetime  # when the observations were downloaded (timezone-aware)
    connector: str       # 'file' | 'fred-csv' | 'fred-api'
    origin: str          # path or URL

    @property
    def series_id(self) -> str:
        return self.series.series_id

    @property
    def content_hash(self) -> str:
        return self.series.content_hash


class SeriesConnector(Protocol):
    name: str

    def fetch(self, series_id: str) -> FetchedVintage:
        """Fetch the series as the source publishes it now (or as the file holds it)."""
        ...
