"""The named public series forecasts may be bound to.

A binding to an id that is not listed here is refused: a forecast is only scoreable by someone
else if they can fetch the same series from its publisher.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeriesInfo:
    series_id: str
    title: str
    frequency: str
    units: str
    publisher: str

    @property
    def citation(self) -> str:
        # FRED's requested citation form.
        return (f"{self.publisher}, {self.title} [{self.series_id}], retrieved from FRED, "
                f"Federal Reserve Bank of St. Louis; https://fred.stlouisfed.org/series/{self.series_id}")


KNOWN_SERIES: dict[str, SeriesInfo] = {
    info.series_id: info
    for info in (
        SeriesInfo("UNRATE", "Unemployment Rate", "monthly", "percent, seasonally adjusted",
                   "U.S. Bureau of Labor Statistics"),
        SeriesInfo("CPIAUCSL", "Consumer Price Index for All Urban Consumers: All Items in U.S. City Average",
                   "monthly", "index 1982-1984=100, seasonally adjusted", "U.S. Bureau of Labor Statistics"),
        SeriesInfo("FEDFUNDS", "Federal Funds Effective Rate", "monthly", "percent, not seasonally adjusted",
                   "Board of Governors of the Federal Reserve System (US)"),
        SeriesInfo("DGS10", "Market Yield on U.S. Treasury Securities at 10-Year Constant Maturity, Quoted on an "
                   "Investment Basis", "daily", "percent, not seasonally adjusted",
                   "Board of Governors of the Federal Reserve System (US)"),
    )
}


class UnknownSeriesError(ValueError):
    def __init__(self, series_id: str):
        super().__init__(f"unknown series id {series_id!r}: known series are {', '.join(sorted(KNOWN_SERIES))}")
        self.series_id = series_id


def series_info(series_id: str) -> SeriesInfo:
    try:
        return KNOWN_SERIES[series_id]
    except KeyError:
        raise UnknownSeriesError(series_id) from None
