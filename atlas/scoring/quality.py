"""great-expectations checks on score rows (FC-7): Brier in [0, 1], outcome in {0, 1}, status known,
and one current score per forecast and scoring version. GX is imported lazily (~3.5 s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forum_atlas.ingestion.validation import quiet_ephemeral_context

SCORE_COLUMNS = ("forecast_id", "scoring_version", "vintage_id", "status", "outcome", "brier")


class ScoreQualityError(ValueError):
    def __init__(self, report: "QualityReport"):
        super().__init__("score table failed its data-quality checks: " + "; ".join(report.failures))
        self.report = report


@dataclass
class QualityReport:
    rows: int
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return all(c["success"] for c in self.checks)

    @property
    def failures(self) -> list[str]:
        return [f"{c['expectation']}({c['column']}): {c['unexpected_count']} bad rows, e.g. {c['examples']}"
                for c in self.checks if not c["success"]]


def validate_current_scores(frame) -> QualityReport:
    """Validate a frame of current score rows (one per forecast and scoring version expected)."""
    import great_expectations.expectations as gxe

    missing = [c for c in SCORE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"score frame lacks columns {missing}")
    context = quiet_ephemeral_context()
    batch = (context.data_sources.add_pandas("scores")
             .add_dataframe_asset("current_scores")
             .add_batch_definition_whole_dataframe("all")
             .get_batch(batch_parameters={"dataframe": frame}))
    expectations = [
        gxe.ExpectColumnValuesToBeBetween(column="brier", min_value=0.0, max_value=1.0),
        gxe.ExpectColumnValuesToBeInSet(column="outcome", value_set=[0, 1]),
        gxe.ExpectColumnValuesToBeInSet(column="status", value_set=["resolved", "unresolvable"]),
        gxe.ExpectColumnValuesToNotBeNull(column="forecast_id"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["forecast_id", "scoring_version"]),
    ]
    report = QualityReport(rows=len(frame))
    for expectation in expectations:
        result = batch.validate(expectation)
        column = getattr(expectation, "column", None) or "+".join(getattr(expectation, "column_list", []))
        details = result.result or {}
        report.checks.append({
            "expectation": type(expectation).__name__,
            "column": column,
            "success": bool(result.success),
            "unexpected_count": int(details.get("unexpected_count") or 0),
            "examples": [str(x) for x in list(details.get("partial_unexpected_list") or [])[:3]],
        })
    return report
