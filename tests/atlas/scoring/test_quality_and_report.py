"""great-expectations checks on score rows, the report composed from rows, and its files."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from forum_atlas.scoring.metrics import accuracy_metrics
from forum_atlas.scoring.quality import validate_current_scores
from forum_atlas.scoring.report import AccuracyReport, AccuracyRows, accuracy_report


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


def summaries(*rows):
    return pd.DataFrame(rows, columns=["version", "measure", "is_default", "scored", "resolved", "mean_score"])


def test_the_report_of_a_version_with_nothing_resolved_says_why_it_has_no_brier():
    report = accuracy_report(AccuracyRows("brier-v1", {"unscoreable": 1}, frame().iloc[:0], None,
                                          summaries(("brier-v1", "brier", True, 0, 0, None))))
    assert report.metrics is None and report.measure == "brier"
    assert report.notes == ["no bound forecast has resolved yet: Brier and skill are not defined",
                            "no forecast has ever been bound: the binding lane has not issued anything"]
    assert [(v.version, v.is_default, v.mean_score) for v in report.versions] == [("brier-v1", True, None)]


def test_the_report_scores_the_resolved_rows_in_the_version_s_measure():
    current = frame(probability=[0.8, 0.5, 0.3], log_score=[-np.log(0.8), None, -np.log(0.7)],
                    deadline_outcome=pd.array([1, None, 1], dtype="Int64"))
    bound = datetime(2025, 4, 15, tzinfo=timezone.utc)
    versions = summaries(("brier-v1", "brier", True, 3, 2, 0.065), ("log-v1", "log", False, 3, 2, 0.29))
    log = accuracy_report(AccuracyRows("log-v1", {"resolved": 2}, current, bound, versions), now=bound)
    assert (log.scoring_version, log.generated_at, log.notes) == ("log-v1", bound, [])
    assert log.metrics.n_resolved == 2 and log.metrics.brier == pytest.approx((0.2 ** 2 + 0.3 ** 2) / 2)
    assert log.log_score == pytest.approx(-(np.log(0.8) + np.log(0.7)) / 2) and log.log_skill is not None
    assert log.deadline_outcomes is None
    deadline = accuracy_report(AccuracyRows("brier-v2", {}, current, bound, summaries()))
    assert deadline.log_score is None
    assert deadline.deadline_outcomes == {"same": 1, "revised since": 1, "not known at the deadline": 0}
