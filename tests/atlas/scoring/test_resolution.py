"""Explicit comparators, strict ties, and missing observations that are never filled."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from forum_atlas.scoring.batch import VintageData, score_bindings
from forum_atlas.scoring.resolution import compare

VINTAGE = VintageData(
    vintage_id=7, series_id="UNRATE", label="2026-03",
    dates=np.array(["2025-03-01", "2025-04-01", "2025-09-01", "2025-10-01", "2025-11-01"], dtype="datetime64[D]"),
    values=np.array([4.2, 4.2, 4.4, np.nan, 4.5]),
)


def bindings(*rows):
    return pd.DataFrame(rows, columns=["forecast_id", "probability", "series_id", "comparator", "threshold",
                                       "reference_date", "target_date"])


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
    ), {"UNRATE": VINTAGE}, "brier-v1").set_index("forecast_id")
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
        score_bindings(bindings((1, 0.5, "UNRATE", "!=", 1.0, None, "2025-04-01")), {"UNRATE": VINTAGE}, "v")
    with pytest.raises(ValueError, match="not one of"):
        compare("==", 1, 1)
