"""Public data series: FRED CSV parsing, the registry of known series, and connectors."""

from forum_atlas.series.coverage import VintageCoverageError
from forum_atlas.series.parsing import Observation, ParsedSeries, SeriesFormatError, parse_fred_csv
from forum_atlas.series.registry import KNOWN_SERIES, SeriesInfo, UnknownSeriesError, series_info

__all__ = ["KNOWN_SERIES", "Observation", "ParsedSeries", "SeriesFormatError", "SeriesInfo",
           "UnknownSeriesError", "VintageCoverageError", "parse_fred_csv", "series_info"]
