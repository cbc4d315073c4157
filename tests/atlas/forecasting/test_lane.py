"""Binding configured questions at issue: month-over-month and thresholds, and bad input."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from forum_atlas.forecasting.binding import BindingError
from forum_atlas.forecasting.drivers import series_drivers
from forum_atlas.forecasting.lane import LaneQuestion, bind_question
from forum_atlas.series.connectors import FileConnector

ISSUED = datetime(2025, 4, 15, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def unrate_2025_04(shared_data):
    return FileConnector(shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv").fetch("UNRATE").series.observations


def test_rolling_month_over_month_question(unrate_2025_04):
    q = bind_question(LaneQuestion(key="k", series_id="UNRATE", comparator=">", reference="previous"),
                      unrate_2025_04, ISSUED)
    assert (q.target_date, q.reference_date) == (date(2025, 4, 1), date(2025, 3, 1))
    assert q.deadline == datetime(2025, 6, 15, tzinfo=timezone.utc)
    assert q.text.startswith("Will UNRATE for 2025-04 be > its 2025-03 value?")
    base_rate, drivers = series_drivers(unrate_2025_04, q)
    assert 0 < base_rate < 1 and [d.name for d in drivers] == ["recent momentum", "medium-term regime"]


def test_threshold_question(unrate_2025_04):
    q = bind_question(LaneQuestion(key="k", series_id="UNRATE", comparator=">=", threshold=4.5,
                                   target_date=date(2025, 9, 1)), unrate_2025_04, ISSUED)
    assert q.threshold == 4.5 and q.reference_date is None


@pytest.mark.parametrize("changes, message", [
    (dict(series_id="NOPE"), "unknown series id 'NOPE'"),
    (dict(threshold=float("nan"), reference=None), "threshold must be a finite number"),
    (dict(deadline=datetime(2025, 4, 1, tzinfo=timezone.utc)), "is not after the issue time"),
    (dict(target_date=date(2025, 3, 1)), "already published at issue"),
    (dict(threshold=4.0), "exactly one of threshold or reference_date"),
])
def test_bad_questions_are_refused(unrate_2025_04, changes, message):
    spec = {"key": "k", "series_id": "UNRATE", "comparator": ">", "reference": "previous", **changes}
    with pytest.raises(BindingError, match=message):
        bind_question(LaneQuestion(**spec), unrate_2025_04, ISSUED)
