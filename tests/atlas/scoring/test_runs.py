"""A scoring run's plain parts (no database): the request checks, what a nightly still has to resolve, the counts."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from forum_atlas.scoring.batch import VintageData
from forum_atlas.scoring.runs import (
    ScoringInputError,
    ScoringRun,
    check_chosen_vintage,
    checked_as_of,
    count_scores,
    unsettled,
)

UTC = timezone.utc


def test_as_of_defaults_to_now_and_must_carry_a_timezone():
    before = datetime.now(UTC)
    assert before <= checked_as_of(None, None, None) <= datetime.now(UTC)
    assert checked_as_of(datetime(2026, 3, 31, tzinfo=UTC), None, None) == datetime(2026, 3, 31, tzinfo=UTC)
    with pytest.raises(ScoringInputError, match="timezone"):
        checked_as_of(datetime(2026, 3, 31), None, None)


def test_an_empty_deadline_range_is_refused():
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert checked_as_of(start, start, datetime(2026, 2, 1, tzinfo=UTC)) == start
    with pytest.raises(ScoringInputError, match="empty range"):
        checked_as_of(start, start, start)


def test_a_chosen_vintage_must_exist_and_be_full():
    check_chosen_vintage(3, {"series_id": "UNRATE", "label": "2026-03", "partial": False})
    with pytest.raises(ScoringInputError, match="vintage 3 does not exist"):
        check_chosen_vintage(3, None)
    with pytest.raises(ScoringInputError, match=r"vintage 3 \(UNRATE 2026-03\) is partial"):
        check_chosen_vintage(3, {"series_id": "UNRATE", "label": "2026-03", "partial": True})


def test_a_nightly_leaves_resolved_forecasts_alone_and_retries_the_rest():
    due = pd.DataFrame({"forecast_id": [1, 2, 3, 4], "series_id": ["UNRATE"] * 4})
    current = pd.DataFrame({"forecast_id": [1, 2], "status": ["resolved", "unresolvable"]})
    assert unsettled(due, current)["forecast_id"].tolist() == [2, 3, 4]


def test_the_counts_say_what_was_scored_and_what_waits_for_data():
    run = ScoringRun(mode="nightly", as_of=datetime(2026, 3, 31, tzinfo=UTC), scoring_version="brier-v1", due=4)
    vintage = VintageData(vintage_id=9, series_id="UNRATE", label="2026-03", fetched_at=run.as_of,
                          dates=np.array([], dtype="datetime64[D]"), values=np.array([], dtype=np.float64))
    count_scores(run, {"UNRATE": vintage}, pd.DataFrame({"status": ["resolved", "resolved", "unresolvable"]}))
    assert (run.vintages, run.scored, run.resolved, run.unresolvable, run.waiting_for_data) == ({"UNRATE": 9}, 3, 2, 1, 1)
    count_scores(run, {}, pd.DataFrame({"status": pd.Series(dtype=object)}))
    assert (run.scored, run.resolved, run.unresolvable, run.waiting_for_data) == (0, 0, 0, 4)
