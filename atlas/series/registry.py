"""The named public series forecasts may be bound to.

The registry is data, not code: its rows live in `forum.series` (seeded by sql/040_series_registry.sql
with UNRATE, CPIAUCSL, FEDFUNDS and DGS10; more with `atlas series register`). A binding to an id
that is not registered is refused with the list of known ids: a forecast is only scoreable by
someone else if they can fetch the same series from its publisher, so a series is registered only
with its title, frequency, units and publisher.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from forum_atlas.series.parsing import FREQUENCIES

_SERIES_ID = re.compile(r"^[A-Z0-9_]+$")


class SeriesRegistrationError(ValueError):
    """A series row that cannot be registered as given; nothing is written."""


@dataclass(frozen=True)
class SeriesInfo:
    series_id: str
    title: str
    frequency: str
    units: str
    publisher: str

    def __post_init__(self) -> None:
        if not _SERIES_ID.match(self.series_id or ""):
            raise SeriesRegistrationError(f"series id {self.series_id!r} is not a FRED id (A-Z, 0-9, _)")
        empty = [name for name in ("title", "units", "publisher") if not str(getattr(self, name) or "").strip()]
        if empty:
            raise SeriesRegistrationError(f"series {self.series_id}: {', '.join(empty)} must be given; nothing "
                                          "was registered")
        if self.frequency not in FREQUENCIES:
            raise SeriesRegistrationError(f"series {self.series_id}: frequency {self.frequency!r} is not one of "
                                          f"{', '.join(FREQUENCIES)}")

    @property
    def citation(self) -> str:
        # FRED's requested citation form.
        return (f"{self.publisher}, {self.title} [{self.series_id}], retrieved from FRED, "
                f"Federal Reserve Bank of St. Louis; https://fred.stlouisfed.org/series/{self.series_id}")


class UnknownSeriesError(ValueError):
    def __init__(self, series_id: str, known: Iterable[str]):
        listed = ", ".join(sorted(known)) or "none (register one with `atlas series register`)"
        super().__init__(f"unknown series id {series_id!r}: known series are {listed}")
        self.series_id = series_id


class SeriesRegistry(Mapping[str, SeriesInfo]):
    """The registered series, as read from the database (or built from rows in tests)."""

    def __init__(self, series: Iterable[SeriesInfo]):
        self._series = {info.series_id: info for info in series}

    def __getitem__(self, series_id: str) -> SeriesInfo:
        return self._series[series_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._series)

    def __len__(self) -> int:
        return len(self._series)

    def info(self, series_id: str) -> SeriesInfo:
        try:
            return self._series[series_id]
        except KeyError:
            raise UnknownSeriesError(series_id, self._series) from None
