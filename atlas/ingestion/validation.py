"""Batch validation with great-expectations before anything is written (ING-4).

One expectation suite for every ingested batch. A failing batch produces a `ValidationReport` that
names each failing row (by its origin, e.g. `corpus.jsonl:17`, and id), the expectation it failed
and the offending value. great-expectations takes seconds to import, so it is imported on first use
and its context is built once per process.

Besides completeness and ranges, the suite refuses what the writer would otherwise choke on: a
non-string where text belongs, NUL characters (PostgreSQL text cannot hold them), lone surrogates
(text that cannot be encoded as UTF-8), a record larger than `max_record_bytes` (UTF-8 bytes of
title + text), and a publication date more than `FUTURE_TOLERANCE` (1 day) after the run's start.
Ids must be unique across the whole input of a run: `validate_unique_ids` checks that before any
batch is written, so the outcome does not depend on the batch size.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from forum_atlas.config import DEFAULT_MAX_RECORD_BYTES
from forum_atlas.ingestion.records import SOURCE_SCORES, parse_timestamp

# A web address, or a local document's file:// URI (its source URL when no web address is given).
URL_PATTERN = r"^(?:https?://[^\s/?#]+\.[^\s]*|file:///[^\s]+)$"
SCORES = list(SOURCE_SCORES)
# Publication dates later than the run's start plus this are refused (search rules them out anyway).
FUTURE_TOLERANCE = timedelta(days=1)
# Columns that must hold text (or be missing): the writer stores them as PostgreSQL text.
STRING_COLUMNS = ("external_id", "title", "text", "source_name", "source_licence", "url", "source_url", "sector",
                  "source_sector")
NUL_PATTERN = r"\x00"
SURROGATE_PATTERN = r"[\ud800-\udfff]"   # json decodes a valid pair to one code point: any left is lone
_NUL, _SURROGATE = re.compile(NUL_PATTERN), re.compile(SURROGATE_PATTERN)
# Columns searched for NUL and lone surrogates: the text columns and the publication date as read.
SCANNED_COLUMNS = (*STRING_COLUMNS, "published_at")
# Derived columns, reported under the input column they are computed from.
_DERIVED = {"content_bytes": "text", "published_at_utc": "published_at"}
# Derived columns that stand for several input columns at once (great-expectations costs ~25 ms per
# expectation and batch, whatever the data: one expectation over all text columns instead of one per
# column makes validation twice as fast): a failure is reported under each input column at fault.
_NON_TEXT, _SCANNED = "first_non_text_value", "text_columns_joined"
# The columns of a row that hold a lone surrogate (None: none). great-expectations fingerprints each batch
# by hashing its frame as UTF-8, so no frame cell may hold a surrogate: they are replaced there by U+FFFD,
# found by this column instead, and reported with the row's value as read.
_SURROGATES = "columns_with_lone_surrogates"


@dataclass(frozen=True)
class Failure:
    origin: str
    external_id: str | None
    expectation: str
    column: str
    value: Any
    detail: str = ""


@dataclass
class ValidationReport:
    rows: int
    expectations: int
    failures: list[Failure] = field(default_factory=list)
    scope: str = "batch"   # "run" for the checks of the whole input, which run before anything is written
    unreported_rows: int = 0   # failing rows past the most a report names (`InputValidation`)

    @property
    def success(self) -> bool:
        return not self.failures

    @property
    def failed_origins(self) -> list[str]:
        return sorted({f.origin for f in self.failures}, key=_origin_sort_key)

    def as_text(self) -> str:
        if self.success:
            return f"{self.rows} rows passed {self.expectations} expectations"
        lines = [f"{len(self.failed_origins) + self.unreported_rows} of {self.rows} rows failed validation; nothing from "
                 f"this {self.scope} was written" + (f" (the first {len(self.failed_origins)} are named)"
                                                     if self.unreported_rows else "") + ":"]
        for f in sorted(self.failures, key=lambda f: (_origin_sort_key(f.origin), f.expectation)):
            detail = f" ({f.detail})" if f.detail else ""
            lines.append(f"  {f.origin} (id {_shown(f.external_id, bare=True)}): {f.expectation} on {f.column} — "
                         f"got {_shown(f.value)}{detail}")
        return "\n".join(lines)

    def as_markdown(self) -> str:
        if self.success:
            return f"**Validation passed**: {self.rows} rows, {self.expectations} expectations."
        rows = "\n".join(
            f"| {f.origin} | {_shown(f.external_id, bare=True)} | {f.expectation} | {f.column} | `{_shown(f.value)}` "
            f"| {f.detail} |" for f in self.failures
        )
        return (f"**Validation failed**: {len(self.failed_origins)} of {self.rows} rows; nothing written.\n\n"
                "| row | id | expectation | column | value | detail |\n|---|---|---|---|---|---|\n" + rows)


class BatchValidationError(ValueError):
    def __init__(self, report: ValidationReport):
        super().__init__(report.as_text())
        self.report = report


def _shown(value: Any, *, bare: bool = False, limit: int = 80) -> str:
    """A value for a message: repr (or str, unless it holds a lone surrogate, which cannot be printed),
    cut short so a 10 MB text never lands in a report."""
    text = str(value) if bare and isinstance(value, str) and not _SURROGATE.search(value) else repr(value)
    if len(text) > limit:
        size = f"{len(value):,} chars" if isinstance(value, str) else type(value).__name__
        text = f"{text[:limit]}… ({size})"
    return text.replace("|", "\\|")


def _origin_sort_key(origin: str) -> tuple:
    name, _, line = origin.rpartition(":")
    return (name, int(line)) if line.isdigit() else (origin, 0)


_suites_lock = threading.Lock()


def _suites() -> tuple[Any, Any, Any]:
    """(batch definition, batch suite, run-ids suite), built once per process; the lock makes a caller
    wait for a warm-up already under way instead of building a second context beside it."""
    with _suites_lock:
        return _build_suites()


WARM_UP_THREAD = "great-expectations warm-up"


def warm_up_in_background() -> threading.Thread:
    """Import great-expectations and build the suites in a thread, now. The import costs 4–5 s once
    per process; started where the process waits anyway (a CLI run's Prefect server starting, Prefect
    setting up a flow run), the first batch no longer waits for it."""
    thread = threading.Thread(target=_suites, name=WARM_UP_THREAD, daemon=True)
    thread.start()
    return thread


def quiet_ephemeral_context() -> Any:
    """An ephemeral great-expectations context that draws no progress bars and does not announce its
    temporary docs folder at INFO (that logger has a level of its own: the package's does not reach it)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    for name in ("great_expectations", "great_expectations.data_context.types.base"):
        logging.getLogger(name).setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


@lru_cache(maxsize=1)
def _build_suites() -> tuple[Any, Any, Any]:
    import great_expectations as gx

    context = quiet_ephemeral_context()
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
        e.ExpectColumnValuesToBeOfType(column=_NON_TEXT, type_="str"),
        e.ExpectColumnValuesToNotMatchRegex(column=_SCANNED, regex=NUL_PATTERN),
        e.ExpectColumnValuesToBeNull(column=_SURROGATES),
        e.ExpectColumnValuesToBeBetween(column="content_bytes", min_value=0, max_value={"$PARAMETER": "max_record_bytes"}),
        e.ExpectColumnValuesToBeBetween(column="published_at_utc", max_value={"$PARAMETER": "latest_published_at"}),
    ):
        suite.add_expectation(expectation)
    id_suite = gx.ExpectationSuite("atlas_ingest_run_ids")
    id_suite.add_expectation(e.ExpectColumnValuesToBeUnique(column="external_id"))
    return batch_definition, suite, id_suite


def _content_bytes(row: dict[str, Any]) -> int | None:
    title, text = row.get("title"), row.get("text")
    if not isinstance(text, str) or not isinstance(title, str):
        return None   # the type check reports it
    return len(title.encode("utf-8", "surrogatepass")) + len(text.encode("utf-8", "surrogatepass"))


def _published_utc(value: Any) -> datetime | None:
    try:
        parsed = parse_timestamp(value)
    except (ValueError, OverflowError, TypeError):
        return None   # the parseable check reports it
    if parsed is None:
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:   # e.g. 9999-12-31T23:00-05:00
        return datetime.max.replace(tzinfo=UTC) if parsed.year > 2000 else datetime.min.replace(tzinfo=UTC)


def _scanned_text(row: dict[str, Any], column: str) -> str | None:
    """The text searched for NUL and surrogates: a text column's string, the publication date as text."""
    value = row.get(column)
    if column == "published_at" and value is not None:
        return str(value)
    return value if isinstance(value, str) else None


def _at_fault(row: dict[str, Any], derived: str) -> list[str]:
    """The input columns of `row` that failed an expectation on a derived multi-column column."""
    if derived == _NON_TEXT:
        return [c for c in STRING_COLUMNS if row.get(c) is not None and not isinstance(row.get(c), str)]
    pattern = _NUL if derived == _SCANNED else _SURROGATE
    return [c for c in SCANNED_COLUMNS if (text := _scanned_text(row, c)) is not None and pattern.search(text)]


def _hashable(value: Any) -> Any:
    """A frame cell great-expectations can fingerprint: lone surrogates replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value


def _frame(rows: list[dict[str, Any]]):
    import pandas as pd

    def column(values: list[Any]) -> Any:
        return pd.Series([_hashable(v) for v in values], dtype=object)

    # Values as read (object dtype, so a number or an object where text belongs stays one and is named
    # by the type check); missing stays missing.
    frame = pd.DataFrame({c: column([r.get(c) for r in rows]) for c in STRING_COLUMNS})
    frame["published_at"] = column([_scanned_text(r, "published_at") for r in rows])
    frame[_NON_TEXT] = column([next((v for c in STRING_COLUMNS if (v := r.get(c)) is not None and not isinstance(v, str)),
                                    None) for r in rows])
    # \x1f between columns: the pattern cannot match across a boundary
    frame[_SCANNED] = column(["\x1f".join(t for c in SCANNED_COLUMNS if (t := _scanned_text(r, c)) is not None)
                              for r in rows])
    frame[_SURROGATES] = column([", ".join(_at_fault(r, _SURROGATES)) or None for r in rows])
    for name in ("source_importance", "source_quality"):
        frame[name] = column([r.get(name) for r in rows])
    frame["content_bytes"] = column([_content_bytes(r) for r in rows])
    frame["published_at_utc"] = column([_published_utc(r.get("published_at")) for r in rows])
    return frame


def _validate(batch_definition: Any, suite: Any, frame: Any, parameters: dict[str, Any] | None = None) -> Any:
    """Pass/fail first (half the cost of the complete format); the complete format, with the index of
    every failing row, only when something failed."""
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    result = batch.validate(suite, result_format="BOOLEAN_ONLY", expectation_parameters=parameters)
    if not result.success:
        result = batch.validate(suite, result_format="COMPLETE", expectation_parameters=parameters)
    return result


def _detail(expectation: str, kwargs: dict, value: Any, limits: dict[str, Any]) -> str:
    if expectation == "expect_column_values_to_be_of_type":
        return f"a JSON {type(value).__name__} where text is required"
    if kwargs.get("column") in (_SCANNED, _SURROGATES) and isinstance(value, str):
        found = (_NUL if kwargs["column"] == _SCANNED else _SURROGATE).search(value)
        if found is None:
            return ""
        if kwargs["column"] == _SCANNED:
            return f"NUL character at position {found.start()}; PostgreSQL text cannot store it"
        return f"lone surrogate U+{ord(found.group()):04X} at position {found.start()}; not encodable as UTF-8"
    if kwargs.get("column") == "content_bytes":
        return (f"{value:,} bytes of title + text; the limit is {limits['max_record_bytes']:,} bytes "
                "(raise it with ATLAS_MAX_RECORD_BYTES or the ingest flow's max_record_bytes)")
    if kwargs.get("column") == "published_at_utc":
        return (f"publication dates more than {FUTURE_TOLERANCE.days} day after the run's start "
                f"({limits['run_started'].isoformat(timespec='seconds')}) are refused")
    return ""


def validate_rows(rows: list[dict[str, Any]], *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
                  run_started: datetime | None = None) -> ValidationReport:
    """Validate one raw batch; never raises for bad data, only reports it.

    `run_started` anchors the future-date tolerance (default: now), so every batch of a run is
    judged against the same instant.
    """
    if not rows:
        return ValidationReport(rows=0, expectations=0)
    run_started = (run_started or datetime.now(UTC)).astimezone(UTC)
    limits = {"max_record_bytes": int(max_record_bytes), "run_started": run_started,
              "latest_published_at": run_started + FUTURE_TOLERANCE}
    batch_definition, suite, _ = _suites()
    frame = _frame(rows)
    result = _validate(batch_definition, suite, frame, {k: limits[k] for k in ("max_record_bytes", "latest_published_at")})
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
            if column in (_NON_TEXT, _SCANNED, _SURROGATES):
                shown = _at_fault(row, column)
            else:
                shown = [_DERIVED.get(column, column)]
            for shown_column in shown:
                value = frame.at[int(index), column] if column == "content_bytes" else row.get(shown_column)
                report.failures.append(Failure(row["origin"], row.get("external_id"), config.type, shown_column, value,
                                               _detail(config.type, config.kwargs, value, limits)))
    return report


class InputValidation:
    """The rows of a whole input validated before anything is written, part by part as they are read (the
    batch suite: one set of rules). Keeps the failures of the first `max_rows_named` failing rows and counts
    the rest, so that memory stays flat whatever the input holds."""

    def __init__(self, *, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES, run_started: datetime | None = None,
                 max_rows_named: int = 1000):
        self.limits = {"max_record_bytes": max_record_bytes, "run_started": run_started}
        self.max_rows_named = max_rows_named
        self._report = ValidationReport(rows=0, expectations=0, scope="run")

    def check(self, rows: list[dict[str, Any]]) -> bool:
        """Validate the next part of the input; whether it passed."""
        part = validate_rows(rows, **self.limits)
        report = self._report
        report.rows += part.rows
        report.expectations = max(report.expectations, part.expectations)
        named = set(report.failed_origins)
        for failure in part.failures:
            if failure.origin in named or len(named) < self.max_rows_named:
                named.add(failure.origin)
                report.failures.append(failure)
        report.unreported_rows += len(set(part.failed_origins) - named)
        return part.success

    def report(self) -> ValidationReport:
        return self._report


def validate_unique_ids(entries: list[tuple[str, Any]]) -> ValidationReport:
    """Ids must be unique across the whole input of a run, not only within a batch.

    `entries` is (origin, id) for every row of the input (`records.scan_input`). Checked before any
    batch is written, so a repeated id fails the same way whatever the batch size.
    """
    if not entries:
        return ValidationReport(rows=0, expectations=0)
    import pandas as pd

    batch_definition, _, suite = _suites()
    # An id with a lone surrogate as its UTF-8 bytes (surrogatepass): hashable, and unequal to any other id.
    frame = pd.DataFrame({"external_id": pd.Series(
        [i.encode("utf-8", "surrogatepass") if isinstance(i, str) and _SURROGATE.search(i) else i for _, i in entries],
        dtype=object)})
    result = _validate(batch_definition, suite, frame)
    report = ValidationReport(rows=len(entries), expectations=len(suite.expectations), scope="run")
    where: dict[str, list[str]] = defaultdict(list)
    for origin, ext_id in entries:
        where[repr(ext_id)].append(origin)
    for outcome in result.results:
        if outcome.success:
            continue
        for index in outcome.result.get("unexpected_index_list") or []:
            origin, ext_id = entries[int(index)]
            others = [o for o in where[repr(ext_id)] if o != origin]
            report.failures.append(Failure(
                origin, ext_id, outcome.expectation_config.type, "external_id", ext_id,
                f"the same id is also at {', '.join(others[:5])}{' …' if len(others) > 5 else ''}; "
                "ids must be unique across the whole input of a run, not only within a batch"))
    return report


def require_valid(rows: list[dict[str, Any]], **limits: Any) -> ValidationReport:
    report = validate_rows(rows, **limits)
    if not report.success:
        raise BatchValidationError(report)
    return report
