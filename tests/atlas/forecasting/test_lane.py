"""Binding configured questions at issue: month-over-month and thresholds, and bad input."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from forum_atlas.forecasting.binding import BindingError
from forum_atlas.forecasting.adaptive import ADAPTIVE_RULE_VERSION, adaptive_answer
from forum_atlas.forecasting.lane import LaneQuestion, bind_question
from forum_atlas.series.connectors import FileConnector
from forum_atlas.series.registry import SeriesInfo, SeriesRegistry

ISSUED = datetime(2025, 4, 15, tzinfo=timezone.utc)
# The registry is data (forum.series); these rows are what sql/040_series_registry.sql seeds.
REGISTRY = SeriesRegistry([
    SeriesInfo("UNRATE", "Unemployment Rate", "monthly", "percent, seasonally adjusted",
               "U.S. Bureau of Labor Statistics"),
    SeriesInfo("DGS10", "Market Yield on U.S. Treasury Securities at 10-Year Constant Maturity", "daily",
               "percent, not seasonally adjusted", "Board of Governors of the Federal Reserve System (US)"),
])


@pytest.fixture(scope="module")
def unrate_2025_04(shared_data):
    return FileConnector(shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv").fetch("UNRATE").series.observations


def test_rolling_month_over_month_question(unrate_2025_04):
    q = bind_question(LaneQuestion(key="k", series_id="UNRATE", comparator=">", reference="previous"),
                      unrate_2025_04, ISSUED, REGISTRY)
    assert (q.target_date, q.reference_date) == (date(2025, 4, 1), date(2025, 3, 1))
    assert q.deadline == datetime(2025, 6, 15, tzinfo=timezone.utc)
    assert q.text.startswith("Will UNRATE for 2025-04 be > its 2025-03 value?")
    base_rate, drivers, record = adaptive_answer(unrate_2025_04, q, "monthly")
    assert 0 < base_rate < 1 and base_rate == record["whole_history_rate"]
    assert [d.name for d in drivers] == ["adaptive base rate", "base-rate drift", "recalibration"]
    assert ADAPTIVE_RULE_VERSION == "series-adaptive-base-rate-v4"
    assert " + ".join(record["base_rate_candidates"]) in drivers[0].rationale  # it says which rates it rests on
    for driver in drivers:  # every driver says what it claims and why it counts (or not)
        assert driver.hypothesis and "earlier origins" in driver.rationale and driver.weight in (0.0, 1.0)
        assert ("passed" if driver.weight else "failed") in driver.rationale


def test_threshold_question(unrate_2025_04):
    q = bind_question(LaneQuestion(key="k", series_id="UNRATE", comparator=">=", threshold=4.5,
                                   target_date=date(2025, 9, 1)), unrate_2025_04, ISSUED, REGISTRY)
    assert q.threshold == 4.5 and q.reference_date is None


@pytest.mark.parametrize("changes, message", [
    (dict(series_id="NOPE"), "unknown series id 'NOPE': known series are DGS10, UNRATE"),
    (dict(target_date=date(2025, 6, 15)), "2025-06-15 is not an observation date of a monthly series"),
    (dict(reference=date(2025, 5, 2), target_date=date(2025, 6, 1)), "reference 2025-05-02 is not an observation"),
    (dict(threshold=float("nan"), reference=None), "threshold must be a finite number"),
    (dict(deadline=datetime(2025, 4, 1, tzinfo=timezone.utc)), "is not after the issue time"),
    (dict(target_date=date(2025, 3, 1)), "already published at issue"),
    (dict(threshold=4.0), "exactly one of threshold or reference_date"),
])
def test_bad_questions_are_refused(unrate_2025_04, changes, message):
    spec = {"key": "k", "series_id": "UNRATE", "comparator": ">", "reference": "previous", **changes}
    with pytest.raises(BindingError, match=message):
        bind_question(LaneQuestion(**spec), unrate_2025_04, ISSUED, REGISTRY)


def test_daily_targets_must_be_weekdays_and_holidays_stay_missing(shared_data):
    dgs10 = FileConnector(shared_data / "series" / "DGS10__fred_daily_1962-2021_oldformat.csv",
                          fetched_at=datetime(2021, 1, 5, tzinfo=timezone.utc)).fetch("DGS10").series.observations
    issued = datetime(2021, 1, 5, tzinfo=timezone.utc)
    spec = {"key": "k", "series_id": "DGS10", "comparator": ">", "threshold": 1.0,
            "deadline": datetime(2021, 3, 1, tzinfo=timezone.utc)}
    with pytest.raises(BindingError, match="2021-01-16 is a Saturday: a business-daily series has no weekend"):
        bind_question(LaneQuestion(**spec, target_date=date(2021, 1, 16)), dgs10, issued, REGISTRY)
    # a weekday holiday is an observation date: it binds, and resolves unresolvable if its row is empty
    q = bind_question(LaneQuestion(**spec, target_date=date(2021, 1, 18)), dgs10, issued, REGISTRY)
    assert q.target_date == date(2021, 1, 18)
    drivers = adaptive_answer(dgs10, q, "daily").drivers
    assert "10-period changes" in drivers[0].hypothesis  # business days 2021-01-04 → 01-18, not 14 calendar days
