"""FRED CSV parsing on the real downloads, both formats, and refusal of garbage."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from forum_atlas.series.connectors import FileConnector
import numpy as np

from forum_atlas.series.parsing import (
    SeriesFormatError,
    infer_frequency,
    observation_date_problem,
    parse_fred_csv,
    periods_between,
)
from forum_atlas.series.registry import SeriesInfo, SeriesRegistrationError, SeriesRegistry, UnknownSeriesError


def test_new_format_keeps_the_never_published_month_as_missing(shared_data):
    vintage = FileConnector(shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv").fetch("UNRATE")
    parsed = vintage.series
    assert parsed.file_format == "new" and parsed.series_id == "UNRATE"
    assert len(parsed.observations) == 194
    assert parsed.missing_dates == [date(2025, 10, 1)]
    by_date = {o.observation_date: o.value for o in parsed.observations}
    assert by_date[date(2025, 9, 1)] == 4.4 and by_date[date(2025, 11, 1)] == 4.5
    assert vintage.label == "2026-03" and vintage.fetched_at == datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_old_format_dot_is_missing(shared_data):
    # the name carries no download month: the download time must be given (never the file's mtime)
    parsed = FileConnector(shared_data / "series" / "DGS10__fred_daily_1962-2021_oldformat.csv",
                           fetched_at=datetime(2021, 1, 5, tzinfo=timezone.utc)).fetch("DGS10").series
    assert parsed.file_format == "old"
    assert len(parsed.missing_dates) == 659  # holidays: '.' in the old export
    assert parsed.observations[-2] .value is None and parsed.observations[-2].observation_date == date(2021, 1, 1)


def test_same_observations_hash_the_same_across_formats():
    new = parse_fred_csv("observation_date,UNRATE\n2025-01-01,4.0\n2025-02-01,\n")
    old = parse_fred_csv("DATE,UNRATE\n2025-01-01,4.0\n2025-02-01,.\n")
    assert new.content_hash == old.content_hash
    assert new.content_hash != parse_fred_csv("DATE,UNRATE\n2025-01-01,4.1\n2025-02-01,.\n").content_hash


@pytest.mark.parametrize("body, problem", [
    ("2025-01-01,4.0\n2025-02-01,abc\n", "line 3: 'abc' is neither a number"),
    ("2025-01-01,4.0\n2025/02/01,4.1\n", "is not a YYYY-MM-DD date"),
    ("2025-01-01,4.0\n2025-02-01,4.1,9\n", "expected 2 fields"),
    ("2025-02-01,4.0\n2025-01-01,4.1\n", "is not after the previous row"),
    ("2025-01-01,4.0\n2025-01-01,4.1\n", "is not after the previous row"),
    ("2025-01-01,nan\n", "neither a number nor a missing marker"),
    ("2025-01-01,inf\n", "neither a number nor a missing marker"),
])
def test_garbage_rows_are_refused_with_line_numbers(body, problem):
    with pytest.raises(SeriesFormatError, match="nothing was stored") as info:
        parse_fred_csv("observation_date,UNRATE\n" + body, source="bad.csv")
    assert problem in str(info.value)


def test_wrong_header_is_refused(shared_data):
    with pytest.raises(SeriesFormatError, match="header"):
        parse_fred_csv((shared_data / "series" / "statsmodels_macrodata_1959Q1-2009Q3.csv").read_text())


def test_unknown_series_id_lists_the_registered_ones():
    registry = SeriesRegistry([SeriesInfo("CPIAUCSL", "CPI", "monthly", "index", "BLS"),
                               SeriesInfo("DGS10", "10-year yield", "daily", "percent", "FRB")])
    assert registry.info("DGS10").frequency == "daily"
    with pytest.raises(UnknownSeriesError, match="unknown series id 'NOPE': known series are CPIAUCSL, DGS10"):
        registry.info("NOPE")


@pytest.mark.parametrize("fields, message", [
    (dict(title=" "), "title must be given"),
    (dict(units="", publisher=""), "units, publisher must be given"),
    (dict(frequency="hourly"), "frequency 'hourly' is not one of"),
    (dict(series_id="gdp-1"), "is not a FRED id"),
])
def test_a_series_is_registered_only_with_all_its_fields(fields, message):
    row = dict(series_id="GDPC1", title="Real GDP", frequency="quarterly", units="billions of chained 2017 dollars",
               publisher="U.S. Bureau of Economic Analysis")
    with pytest.raises(SeriesRegistrationError, match=message):
        SeriesInfo(**{**row, **fields})


@pytest.mark.parametrize("day, frequency, problem", [
    (date(2021, 1, 16), "daily", "is a Saturday"),
    (date(2021, 1, 17), "daily", "is a Sunday"),
    (date(2021, 1, 18), "daily", None),            # a holiday is a weekday: an (empty) observation date
    (date(2025, 6, 15), "monthly", "not an observation date of a monthly series"),
    (date(2025, 6, 1), "monthly", None),
    (date(2025, 5, 1), "quarterly", "1 January, April, July or October"),
    (date(2025, 7, 1), "quarterly", None),
    (date(2025, 7, 1), "annual", "1 January"),
])
def test_observation_dates_by_frequency(day, frequency, problem):
    found = observation_date_problem(day, frequency)
    assert found is None if problem is None else problem in found


def test_periods_are_the_series_own():
    assert periods_between(date(2021, 1, 1), date(2021, 2, 1), "daily") == 21  # business days, not 31
    assert periods_between(date(2024, 11, 1), date(2025, 2, 1), "monthly") == 3
    assert periods_between(date(2024, 10, 1), date(2025, 4, 1), "quarterly") == 2


def test_frequency_is_read_off_the_dates(shared_data):
    daily = FileConnector(shared_data / "series" / "DGS10__fred_daily_1962-2021_oldformat.csv",
                          fetched_at=datetime(2021, 1, 5, tzinfo=timezone.utc)).fetch("DGS10").series
    monthly = FileConnector(shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv").fetch("UNRATE").series
    for parsed, frequency in ((daily, "daily"), (monthly, "monthly")):
        dates = np.array([o.observation_date for o in parsed.observations], dtype="datetime64[D]")
        assert infer_frequency(dates) == frequency
        assert all(observation_date_problem(d, frequency) is None for d in dates.astype(date))
