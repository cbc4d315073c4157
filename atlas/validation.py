"""Batch validation with great-expectations before anything is written (ING-4).

One expectation suite for every ingested batch. A failing batch produces a `ValidationReport` that
names each failing row (by its origin, e.g. `corpus.jsonl:17`, and id), the expectation it failed
and the offending value. great-expectations takes seconds to import, so it is imported on first use
and its context is built once per process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

URL_PATTERN = r"^https?://[^\s/?#]+\.[^\s]*$"
SCORES = [1, 2, 3, 4, 5]


@dataclass(frozen=True)
class Failure:
    origin: str
    external_id: str | None
    expectation: str
    column: str
    value: Any


@dataclass
class ValidationReport:
    rows: int
    expectations: int
    failures: list[Failure] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return not self.failures

    @property
    def failed_origins(self) -> list[str]:
        return sorted({f.origin for f in self.failures}, key=_origin_sort_key)

    def as_text(self) -> str:
        if self.success:
            return f"{self.rows} rows passed {self.expectations} expectations"
        lines = [f"{len(self.failed_origins)} of {self.rows} rows failed validation; nothing from this batch was written:"]
        for f in sorted(self.failures, key=lambda f: (_origin_sort_key(f.origin), f.expectation)):
            lines.append(f"  {f.origin} (id {f.external_id!s}): {f.expectation} on {f.column} — got {f.value!r}")
        return "\n".join(lines)

    def as_markdown(self) -> str:
        if self.success:
            return f"**Validation passed**: {self.rows} rows, {self.expectations} expectations."
        rows = "\n".join(
            f"| {f.origin} | {f.external_id} | {f.expectation} | {f.column} | `{f.value!r}` |" for f in self.failures
        )
        return (f"**Validation failed**: {len(self.failed_origins)} of {self.rows} rows; nothing written.\n\n"
                "| row | id | expectation | column | value |\n|---|---|---|---|---|\n" + rows)


class BatchValidationError(ValueError):
    def __init__(self, report: ValidationReport):
        super().__init__(report.as_text())
        self.report = report


def _origin_sort_key(origin: str) -> tuple:
    name, _, line = origin.rpartition(":")
    return (name, int(line)) if line.isdigit() else (origin, 0)


@lru_cache(maxsize=1)
def _validator() -> tuple[Any, Any]:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)  # no INFO chatter per context

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas("atlas_ingest").add_dataframe_asset("batch").add_batch_definition_whole_dataframe("all")
    )
    e = gx.expectations
    suite = gx.ExpectationSuite("atlas_ingest_batch")
    for expectation in (
        e.ExpectColumnValuesToNotBeNull(column="external_id"),
        e.ExpectColumnValuesToBeUnique(column="external_id"),
        e.ExpectColumnValuesToNotBeNull(column="text"),
        e.ExpectColumnValuesToMatchRegex(column="text", regex=r"\S"),
        e.ExpectColumnValuesToNotBeNull(column="source_name"),
        e.ExpectColumnValuesToMatchRegex(column="source_name", regex=r"\S"),
        e.ExpectColumnValuesToNotBeNull(column="source_licence"),
        e.ExpectColumnValuesToMatchRegex(column="source_licence", regex=r"\S"),
        e.ExpectColumnValuesToBeInSet(column="source_importance", value_set=SCORES),
        e.ExpectColumnValuesToNotBeNull(column="source_importance"),
        e.ExpectColumnValuesToBeInSet(column="source_quality", value_set=SCORES),
        e.ExpectColumnValuesToNotBeNull(column="source_quality"),
        e.ExpectColumnValuesToBeDateutilParseable(column="published_at"),
        e.ExpectColumnValuesToMatchRegex(column="url", regex=URL_PATTERN),
        e.ExpectColumnValuesToMatchRegex(column="source_url", regex=URL_PATTERN),
    ):
        suite.add_expectation(expectation)
    return batch_definition, suite


def _frame(rows: list[dict[str, Any]]):
    import pandas as pd

    def as_text(value: Any) -> Any:
        # A number where text belongs is caught by the regex checks rather than crashing them;
        # missing stays missing.
        return value if value is None or isinstance(value, str) else str(value)

    text_columns = ("text", "title", "source_name", "source_licence", "url", "source_url", "published_at", "external_id")
    frame = pd.DataFrame({c: [as_text(r.get(c)) for r in rows] for c in text_columns})
    for column in ("source_importance", "source_quality"):
        frame[column] = pd.Series([r.get(column) for r in rows], dtype=object)
    return frame


def validate_rows(rows: list[dict[str, Any]]) -> ValidationReport:
    """Validate one raw batch; never raises for bad data, only reports it."""
    if not rows:
        return ValidationReport(rows=0, expectations=0)
    batch_definition, suite = _validator()
    frame = _frame(rows)
    result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(suite, result_format="COMPLETE")
    report = ValidationReport(rows=len(rows), expectations=len(suite.expectations))
    for outcome in result.results:
        if outcome.success:
            continue
        config = outcome.expectation_config
        column = config.kwargs.get("column", "")
        indexes = outcome.result.get("unexpected_index_list") or []
        if not indexes and outcome.exception_info and outcome.exception_info.get("raised_exception"):
            indexes = list(range(len(rows)))
        for index in indexes:
            row = rows[int(index)]
            report.failures.append(Failure(row["origin"], row.get("external_id"), config.type, column, row.get(column)))
    return report


def require_valid(rows: list[dict[str, Any]]) -> ValidationReport:
    report = validate_rows(rows)
    if not report.success:
        raise BatchValidationError(report)
    return report
