"""Nightly scoring (FC-6/7/8): (optionally fetch new vintages) → resolve bound forecasts past their
deadline → append Brier scores (great-expectations-checked) → Accuracy report as artifacts and files.
"""

from __future__ import annotations

from datetime import datetime, timezone

from prefect import flow
from pydantic import BaseModel, Field

from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.scoring import build_accuracy_report, fetch_series, publish_report_artifacts, resolve_and_score


class ScoringParameters(BaseModel):
    as_of: datetime | None = Field(default=None, description="score deadlines passed by this instant (UTC); empty = now")
    fetch_series: list[str] = Field(default_factory=list,
                                    description="FRED ids to fetch as new vintages first (needs network); empty = none")
    fred_key_secret: str | None = Field(default=None, description="name of a Prefect Secret block holding a FRED "
                                        "API key; empty = $FRED_API_KEY, else the public CSV export")
    fixed_base_rate: float = Field(default=0.5, ge=0, le=1, description="reference forecast for the second skill score")
    report_dir: str | None = Field(default=None, description="also write accuracy.md/json and reliability.png here")


@flow(name="score-accuracy", log_prints=True)
def score_accuracy(params: ScoringParameters = ScoringParameters(), database_block: str | None = None) -> dict:
    settings = resolve_settings(database_block)
    as_of = params.as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=timezone.utc)
    if params.fetch_series:
        fetch_series(settings, params.fetch_series, params.fred_key_secret)
    run = resolve_and_score(settings, mode="nightly", as_of=as_of, run_id=flow_run_id())
    report, files = build_accuracy_report(settings, fixed_base_rate=params.fixed_base_rate, out_dir=params.report_dir)
    publish_report_artifacts(report)
    print(f"scored {run.scored} of {run.due} due ({run.inserted} new rows: {run.resolved} resolved, "
          f"{run.unresolvable} unresolvable); {run.no_vintage} without a vintage")
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    brier = f"{report.metrics.brier:.4f}" if report.metrics else "n/a"
    print(f"accuracy: {counts}; mean Brier {brier}; last bound forecast {report.last_bound_at}")
    return {"run": run.as_dict(), "report": report.as_dict(), "files": files}
