"""Backfill (FC-7): score the bound forecasts whose deadline has passed (all of them, or those in a date range)
under a scoring version — the default one, or a new one written beside it — on a chosen vintage or the newest
one, then publish that version's Accuracy report. Idempotent: a vintage used before must reproduce the stored
scores exactly and adds nothing; a new vintage or a new version adds rows and keeps the old ones."""

from __future__ import annotations

from datetime import date, datetime, time, timezone

from prefect import flow
from prefect.artifacts import create_table_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.tasks import flow_run_id
from forum_atlas.scoring.versions import DEFAULT_VERSION, VersionName
from forum_atlas.tasks.scoring import build_accuracy_report, publish_report_artifacts, resolve_and_score, run_name_from


class BackfillParameters(BaseModel):
    scoring_version: VersionName = Field(default=DEFAULT_VERSION, description="the scoring version to write "
                                         "(atlas/scoring/versions.py); a new one is written beside the others")
    deadline_from: date | None = Field(default=None, description="first deadline date included (UTC); empty = the "
                                       "earliest")
    deadline_to: date | None = Field(default=None, description="first deadline date excluded (UTC); empty = every "
                                     "deadline passed by as_of")
    vintage_id: int | None = Field(default=None, ge=1, description="score on this vintage; empty = newest by as_of")
    series_id: str | None = Field(default=None, pattern=r"^[A-Z0-9_]+$", description="only this series (a FRED id)")
    as_of: datetime | None = Field(default=None, description="newest vintage fetched by this instant; empty = now")


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(0), tzinfo=timezone.utc)


@flow(name="backfill-scores",
      flow_run_name=run_name_from("backfill", "scoring_version", "deadline_from", "deadline_to"), log_prints=True)
def backfill_scores(params: BackfillParameters = BackfillParameters(),
                    database_block: AtlasDatabase | None = None) -> dict:
    """Score the bound forecasts past their deadline (optionally a deadline range) in a scoring version;
    idempotent. With no parameters: every due forecast in the default version, on the newest vintage.

    Args:
        params: the scoring version, the deadline range, and optionally the vintage, series and as-of instant.
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment.
    """
    settings = resolve_settings(database_block)
    as_of = params.as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=timezone.utc)
    run = resolve_and_score(settings, mode="backfill", as_of=as_of, vintage_id=params.vintage_id,
                            series_id=params.series_id, deadline_from=_midnight(params.deadline_from),
                            deadline_to=_midnight(params.deadline_to), run_id=flow_run_id(),
                            scoring_version=params.scoring_version)
    summary = run.as_dict()
    create_table_artifact(key="backfill-scores", description="backfill result",
                          table=[{"measure": k, "value": str(v)} for k, v in summary.items() if k != "quality_checks"])
    report, _ = build_accuracy_report(settings, fixed_base_rate=0.5, out_dir=None,
                                      scoring_version=params.scoring_version)
    publish_report_artifacts(report, key_prefix="backfill-accuracy")
    span = f"{params.deadline_from or 'the first deadline'}..{params.deadline_to or as_of.date()}"
    print(f"backfill {params.scoring_version} {span}: {run.due} due, {run.scored} scored, {run.inserted} new rows, "
          f"{run.reproduced} reproduced exactly")
    return summary
