"""great-expectations checks on score rows, and the report's files."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from forum_atlas.scoring.metrics import accuracy_metrics
from forum_atlas.scoring.quality import validate_current_scores
from forum_atlas.scoring.report import AccuracyReport


def frame(**overrides):
    data = {"forecast_id": [1, 2, 3], "scoring_version": ["v1"] * 3, "vintage_id": [4, 4, 4],
            "status": ["resolved", "unresolvable", "resolved"], "outcome": pd.array([1, None, 0], dtype="Int64"),
            "brier": [0.04, None, 0.25]}
    data.update(overrides)
    return pd.DataFrame(data)


def test_clean_scores_pass_and_each_rule_can_fail():
    assert validate_current_scores(frame()).success
    bad = validate_current_scores(frame(forecast_id=[1, 1, 3], brier=[0.04, None, 1.5],
                                        outcome=pd.array([1, None, 2], dtype="Int64")))
    failed = {c["expectation"] + ":" + c["column"] for c in bad.checks if not c["success"]}
    assert failed == {"ExpectColumnValuesToBeBetween:brier", "ExpectColumnValuesToBeInSet:outcome",
                      "ExpectCompoundColumnsToBeUnique:forecast_id+scoring_version"}


def test_report_files(tmp_path):
    metrics = accuracy_metrics([0.9, 0.2, 0.6, 0.6], [1, 0, 0, 1])
    report = AccuracyReport("brier-v1", datetime(2026, 3, 31, tzinfo=timezone.utc),
                            {"unscoreable": 2, "pending": 1, "resolved": 4, "unresolvable": 1},
                            datetime(2025, 4, 15, tzinfo=timezone.utc), metrics)
    paths = report.write(tmp_path)
    assert paths["reliability"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = paths["markdown"].read_text()
    assert "| last bound forecast | 2025-04-15T00:00:00+00:00 |" in text and "| unscoreable | 2 |" in text
    assert report.scoreable == 6
    assert f"| mean Brier | {metrics.brier:.4f} |" in text
