"""Explicit comparators, strict ties, and missing observations that are never filled."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from forum_atlas.scoring.batch import VintageData, reclassified, score_bindings, vintages_current_at
from forum_atlas.scoring.resolution import compare
from forum_atlas.scoring.versions import SCORING_RULES

VINTAGE = VintageData(
    vintage_id=7, series_id="UNRATE", label="2026-03", fetched_at=datetime(2026, 3, 31, tzinfo=timezone.utc),
    dates=np.array(["2025-03-01", "2025-04-01", "2025-09-01", "2025-10-01", "2025-11-01"], dtype="datetime64[D]"),
    values=np.array([4.2, 4.2, 4.4, np.nan, 4.5]),
)


DEADLINE = "2026-01-15T00:00:00+00:00"   # before VINTAGE was fetched


def bindings(*rows, deadline=DEADLINE):
    frame = pd.DataFrame(rows, columns=["forecast_id", "probability", "series_id", "comparator", "threshold",
                                        "reference_date", "target_date"])
    frame["deadline"] = pd.Timestamp(deadline)
    return frame


@pytest.mark.parametrize("comparator, expected", [(">", False), (">=", True), ("<", False), ("<=", True)])
def test_tie_follows_the_comparator_strictly(comparator, expected):
    assert compare(comparator, 4.2, 4.2) is expected


def test_scores_rows_tie_missing_and_out_of_range():
    frame = score_bindings(bindings(
        (1, 0.7, "UNRATE", ">", None, "2025-03-01", "2025-04-01"),   # tie under '>' -> NO
        (2, 0.7, "UNRATE", ">", None, "2025-09-01", "2025-10-01"),   # October never published
        (3, 0.2, "UNRATE", "<", 4.45, None, "2025-11-01"),           # threshold: 4.5 < 4.45 -> NO
        (4, 0.6, "UNRATE", ">=", 4.0, None, "2026-06-01"),           # beyond the vintage
        (5, 0.6, "UNRATE", ">", None, "2025-10-01", "2025-11-01"),   # reference missing
        (6, 0.9, "CPIAUCSL", ">", 1.0, None, "2025-01-01"),          # no vintage for the series
    ), {"UNRATE": VINTAGE}, SCORING_RULES["brier-v1"]).set_index("forecast_id")
    assert list(frame.index) == [1, 2, 3, 4, 5]
    assert frame.loc[1, "status"] == "resolved" and frame.loc[1, "outcome"] == 0
    assert frame.loc[1, "brier"] == pytest.approx(0.49)
    assert frame.loc[3, "outcome"] == 0 and frame.loc[3, "reference_value"] == 4.45
    for fid in (2, 4, 5):
        assert frame.loc[fid, "status"] == "unresolvable" and pd.isna(frame.loc[fid, "outcome"])
        assert pd.isna(frame.loc[fid, "brier"])
    assert "target observation 2025-10-01 is empty in vintage 2026-03 (#7)" in frame.loc[2, "reason"]
    assert "not forward-filled" in frame.loc[2, "reason"]
    assert frame.loc[2, "target_present"] and not frame.loc[4, "target_present"]
    assert "not in vintage 2026-03 (#7) (it ends at 2025-11-01)" in frame.loc[4, "reason"]
    assert frame.loc[5, "reason"].startswith("reference observation 2025-10-01 is empty")
    assert frame.loc[1, "target_date"] == np.datetime64("2025-04-01")
    assert pd.isna(frame.loc[3, "reference_present"]) and frame.loc[1, "reference_present"]


def test_unknown_comparator_is_refused():
    with pytest.raises(ValueError, match="unknown comparators"):
        score_bindings(bindings((1, 0.5, "UNRATE", "!=", 1.0, None, "2025-04-01")), {"UNRATE": VINTAGE}, SCORING_RULES["brier-v1"])
    with pytest.raises(ValueError, match="not one of"):
        compare("==", 1, 1)


def test_a_vintage_fetched_by_the_deadline_that_lacks_the_date_leaves_the_forecast_waiting():
    """Issue 24 (3): a night whose fetch failed scores on an older vintage; a date it lacks is "not fetched
    yet", never unresolvable. What it can resolve, it resolves; a vintage fetched after the deadline that
    lacks the date (October 2025, never published) is unresolvable."""
    rows = [(1, 0.7, "UNRATE", ">", None, "2025-03-01", "2025-04-01"),    # in the vintage: resolves
            (2, 0.7, "UNRATE", ">", None, "2025-09-01", "2025-10-01"),    # empty in it
            (4, 0.6, "UNRATE", ">=", 4.0, None, "2026-06-01")]            # beyond it
    old = replace(VINTAGE, fetched_at=datetime(2026, 1, 15, tzinfo=timezone.utc))   # at the deadline: not after
    assert list(score_bindings(bindings(*rows), {"UNRATE": old}, SCORING_RULES["brier-v1"])["forecast_id"]) == [1]
    after = score_bindings(bindings(*rows), {"UNRATE": VINTAGE}, SCORING_RULES["brier-v1"]).set_index("forecast_id")
    assert list(after["status"]) == ["resolved", "unresolvable", "unresolvable"]


def test_forecasts_mislabelled_by_a_failed_fetch_are_named_when_a_later_vintage_settles_them():
    previous = pd.DataFrame({
        "forecast_id": [2, 3, 5], "vintage_id": [6, 6, 7], "status": ["unresolvable", "unresolvable", "unresolvable"],
        "vintage_fetched_at": pd.to_datetime(["2026-01-10", "2026-01-10", "2026-03-31"], utc=True),
        "deadline": pd.to_datetime([DEADLINE, DEADLINE, DEADLINE], utc=True)})
    new_scores = pd.DataFrame({"forecast_id": [2, 5], "vintage_id": [7, 8], "status": ["resolved", "unresolvable"]})
    [change] = reclassified(previous, new_scores)   # 3 is not settled yet; 5 was rightly unresolvable
    assert {k: change[k] for k in ("forecast_id", "was", "was_vintage_id", "now", "vintage_id")} == {
        "forecast_id": 2, "was": "unresolvable", "was_vintage_id": 6, "now": "resolved", "vintage_id": 7}
    assert "fetched at 2026-01-10T00:00:00+00:00, by the deadline 2026-01-15" in change["why"]
    assert "not that it will never be published" in change["why"]


def test_brier_v2_records_each_binding_s_deadline_vintage_or_none():
    """A binding whose deadline came before any vintage records none (and no deadline outcome); the others record
    the newest vintage fetched by their deadline and the outcome it gave."""
    frame = bindings((1, 0.7, "UNRATE", ">", 4.0, None, "2025-03-01"), (2, 0.7, "UNRATE", ">", 4.0, None, "2025-03-01"))
    frame["deadline"] = [datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2026, 3, 31, tzinfo=timezone.utc)]
    catalogue = pd.DataFrame({"vintage_id": [VINTAGE.vintage_id], "series_id": ["UNRATE"],
                              "fetched_at": [VINTAGE.fetched_at]})
    frame["deadline_vintage_id"] = vintages_current_at(catalogue, frame["series_id"], frame["deadline"])
    scores = score_bindings(frame, {"UNRATE": VINTAGE}, SCORING_RULES["brier-v2"], {VINTAGE.vintage_id: VINTAGE})
    rows = scores.set_index("forecast_id")
    assert rows["deadline_vintage_id"].isna().tolist() == [True, False]
    assert rows.loc[2, "deadline_vintage_id"] == VINTAGE.vintage_id and rows.loc[2, "deadline_outcome"] == rows.loc[2, "outcome"]
    assert pd.isna(rows.loc[1, "deadline_outcome"])
    assert "1.0" not in scores[["deadline_vintage_id"]].to_csv(index=False)   # stays an integer for the COPY
