"""Backfill (FC-7): re-score the bound forecasts whose deadline falls in a date range, on a chosen
vintage or the newest one. Idempotent: a vintage used before must reproduce the stored scores
exactly and adds nothing; a new vintage adds a new score version and keeps the old ones."""

from __future__ import annotations

from datetime import date, datetime, time, timezone

from prefect import flow
from prefect.artifacts import create_table_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.scoring import resolve_and_score, run_name_from


class BackfillParameters(BaseModel):
    deadline_from: date = Field(description="first deadline date included (UTC)")
    deadline_to: date = Field(description="first deadline date excluded (UTC)")
    vintage_id: int | None = Field(default=None, ge=1, description="score on this vintage; empty = newest by as_of")
    series_id: str | None = Field(default=None, pattern=r"^[A-Z0-9_]+$", description="only this series (a FRED id)")
    as_of: datetime | None = Field(default=None, description="newest vintage fetched by this instant; empty = now")


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=timezone.utc)


@flow(name="backfill-scores", flow_run_name=run_name_from("backfill", "deadline_from", "deadline_to"), log_prints=True)
def backfill_scores(params: BackfillParameters, database_block: AtlasDatabase | None = None) -> dict:
    """Re-score the bound forecasts whose deadline falls in a date range; idempotent.

    Args:
        params: the deadline range, and optionally the vintage, series and as-of instant.
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment.
    """
    settings = resolve_settings(database_block)
    as_of = params.as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        as_of = as_of.replace(tzinfo=timezone.utc)
    run = resolve_and_score(settings, mode="backfill", as_of=as_of, vintage_id=params.vintage_id,
                            series_id=params.series_id, deadline_from=_midnight(params.deadline_from),
                            deadline_to=_midnight(params.deadline_to),
                            run_id=flow_run_id())
    summary = run.as_dict()
    create_table_artifact(key="backfill-scores", description="backfill result",
                          table=[{"measure": k, "value": str(v)} for k, v in summary.items() if k != "quality_checks"])
    print(f"backfill {params.deadline_from}..{params.deadline_to}: {run.scored} scored, {run.inserted} new rows, "
          f"{run.reproduced} reproduced exactly")
    return summary
