"""Public data series: FRED CSV parsing, the registry of known series, and connectors."""

from forum_atlas.series.coverage import VintageCoverageError
from forum_atlas.series.parsing import Observation, ParsedSeries, SeriesFormatError, parse_fred_csv
from forum_atlas.series.registry import SeriesInfo, SeriesRegistry, UnknownSeriesError

__all__ = ["Observation", "ParsedSeries", "SeriesFormatError", "SeriesInfo", "SeriesRegistry",
           "UnknownSeriesError", "VintageCoverageError", "parse_fred_csv"]
