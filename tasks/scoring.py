"""Scoring tasks: load series vintages, resolve + score (nightly or backfill), the Accuracy report."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task

from forum_atlas.config import Settings
from forum_atlas.scoring.report import AccuracyReport
from forum_atlas.series.connectors import make_connector
from forum_atlas.series.coverage import VintageCoverageError
from forum_atlas.store import forecasts as repo
from forum_atlas.store import scores
from forum_atlas.store.db import shared_database


def fred_api_key(secret_block: str | None) -> str | None:
    """The FRED API key from a Prefect Secret block, else $FRED_API_KEY; never a flow parameter."""
    if secret_block:
        from prefect.blocks.system import Secret

        return Secret.load(secret_block).get()
    return os.environ.get("FRED_API_KEY") or None


@task(name="fetch-series", retries=0)
def fetch_series(settings: Settings, series_ids: list[str], key_secret: str | None) -> list[dict[str, Any]]:
    """Fetch each series from FRED now and store it as a vintage (identical content is not stored twice).
    A fetch that covers less than the newest stored vintage (a truncated download, a publisher's outage) is
    kept as a partial vintage, never used for resolution, and the run scores on what it had."""
    # ATLAS_FRED_API_BASE / ATLAS_FRED_CSV_BASE point at a mirror (or a test server) instead of FRED.
    bases = {option: os.environ[variable] for option, variable in
             (("api_base", "ATLAS_FRED_API_BASE"), ("csv_base", "ATLAS_FRED_CSV_BASE")) if os.environ.get(variable)}
    source = make_connector("fred", api_key=fred_api_key(key_secret), **bases)
    fetched = [source.fetch(series_id) for series_id in series_ids]
    stored = []
    with shared_database(settings).transaction() as conn:
        for vintage in fetched:
            try:
                vintage_id, partial = repo.store_vintage(conn, vintage)[0], False
            except VintageCoverageError as regressed:   # raised before anything of it is written
                vintage_id, partial = repo.store_vintage(conn, vintage, partial=True)[0], True
                get_run_logger().warning("stored as partial, not used for resolution: %s", regressed)
            stored.append({"series_id": vintage.series_id, "vintage_id": vintage_id, "label": vintage.label,
                           "partial": partial})
    return stored


@task(name="resolve-and-score")
def resolve_and_score(settings: Settings, *, mode: str, as_of: datetime, vintage_id: int | None = None,
                      series_id: str | None = None, deadline_from: datetime | None = None,
                      deadline_to: datetime | None = None, run_id: str | None = None) -> scores.ScoringRun:
    with shared_database(settings).transaction() as conn:
        return scores.run_scoring(conn, mode=mode, as_of=as_of, vintage_id=vintage_id, series_id=series_id,
                                  deadline_from=deadline_from, deadline_to=deadline_to, run_id=run_id)


@task(name="accuracy-report")
def build_accuracy_report(settings: Settings, *, fixed_base_rate: float, out_dir: str | None
                          ) -> tuple[AccuracyReport, dict[str, str]]:
    with shared_database(settings).connection() as conn:
        report = scores.accuracy_report(conn, fixed_base_rate=fixed_base_rate)
    files = {k: str(v) for k, v in report.write(Path(out_dir)).items()} if out_dir else {}
    return report, files


def publish_report_artifacts(report: AccuracyReport, key_prefix: str = "accuracy") -> None:
    """Table + markdown artifacts in the Prefect UI (FC-8)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    create_table_artifact(key=f"{key_prefix}-table", table=[{"measure": k.strip(), "value": v} for k, v in report.rows()],
                          description="Accuracy: live state counts, last bound forecast, Brier and skill")
    create_markdown_artifact(key=f"{key_prefix}-report", markdown=report.markdown(),
                             description="Accuracy report with the Murphy decomposition by bin")
