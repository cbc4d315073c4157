"""Nightly scoring (FC-6/7/8): fetch a new vintage of every series with due bindings → resolve bound
forecasts past their deadline → append scores in every scoring version in use (the default and each one
backfilled; great-expectations-checked) → Accuracy report as
table, markdown and image artifacts (and files when asked). A run whose fetch failed ends Degraded.
"""

from __future__ import annotations

from datetime import datetime, timezone

from prefect import flow
from prefect.blocks.system import Secret
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.scoring import (
    build_accuracy_report,
    degraded_final_state,
    fetch_series,
    publish_fetch_outcomes,
    publish_report_artifacts,
    resolve_and_score,
    run_name_from,
    scoring_versions_in_use,
    series_due,
)


class ScoringParameters(BaseModel):
    as_of: datetime | None = Field(default=None, description="score deadlines passed by this instant (UTC); empty = "
                                   "now. A past instant replays: nothing is fetched unless fetch_series names it")
    fetch_series: list[str] | None = Field(
        default=None, max_length=100,
        description="FRED ids to fetch as new vintages first; empty = every series with due bindings when as_of "
                    "is empty (a live run), none for a replay; [] = fetch nothing. Unreachable FRED is recorded "
                    "as a typed outcome and the run scores on the stored vintages")
    fred_key_secret: Secret | None = Field(default=None, description="the Secret block holding a FRED API key; "
                                           "empty = $FRED_API_KEY, else the public CSV export")
    fixed_base_rate: float = Field(default=0.5, ge=0, le=1, description="reference forecast for the second skill score")
    report_dir: str | None = Field(default=None, min_length=1,
                                   description="also write accuracy.md/json and reliability.png here (the artifacts "
                                               "need no directory)")


@flow(name="score-accuracy", flow_run_name=run_name_from("score-accuracy", "as_of"), log_prints=True)
def score_accuracy(params: ScoringParameters = ScoringParameters(),
                   database_block: AtlasDatabase | None = None) -> dict:
    """Nightly: fetch, resolve and score the bound forecasts past their deadline, publish the Accuracy report.

    Args:
        params: what to score as of when, what to fetch first, and where else to write the report.
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment.
    """
    settings = resolve_settings(database_block)
    to_fetch = params.fetch_series
    if to_fetch is None:
        to_fetch = [] if params.as_of else series_due(settings, datetime.now(timezone.utc))
    fetched = fetch_series(settings, to_fetch, params.fred_key_secret) if to_fetch else []
    publish_fetch_outcomes(fetched, key="nightly-fetch")
    # a live run's instant is taken after the fetch: a vintage counts from when it was fetched
    as_of = params.as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=timezone.utc)
    # every version in use (the default first), each in its own transaction: a backfilled version stays current
    runs = [resolve_and_score(settings, mode="nightly", as_of=as_of, run_id=flow_run_id(), scoring_version=version)
            for version in scoring_versions_in_use(settings)]
    run = runs[0]
    report, files = build_accuracy_report(settings, fixed_base_rate=params.fixed_base_rate, out_dir=params.report_dir)
    publish_report_artifacts(report)
    # log_prints: these lines go to the run logger (the UI's log) and to a CLI user's terminal alike
    print(f"scored {run.scored} of {run.due} due ({run.inserted} new rows: {run.resolved} resolved, "
          f"{run.unresolvable} unresolvable); {run.waiting_for_data} pending: waiting for data")
    for other in runs[1:]:
        print(f"{other.scoring_version}: scored {other.scored} of {other.due} due ({other.inserted} new rows)")
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    brier = f"{report.metrics.brier:.4f}" if report.metrics else "n/a"
    print(f"accuracy: {counts}; mean Brier {brier}; last bound forecast {report.last_bound_at}")
    result = {"run": run.as_dict(), "versions": {r.scoring_version: r.as_dict() for r in runs},
              "report": report.as_dict(), "files": files, "fetched": fetched}
    return degraded_final_state(fetched, result) or result
