"""Binding lane (FC-4/5): construct forecasts from the configured question set and bind each at
issue to its series, comparator, threshold/reference and deadline. Its deployment ships paused.

Every question is checked against the data visible at issue before anything is written; one bad
question fails the run with nothing bound.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_table_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.forecasting.lane import LaneQuestion, load_questions
from forum_atlas.resources import data_file
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.forecasting import bind_lane_question, check_lane_questions
from forum_atlas.tasks.scoring import fetch_series


class LaneParameters(BaseModel):
    question_file: str | None = Field(default=None, description="JSON {questions: [...]}; empty = data/forecast_lane.json")
    questions: list[LaneQuestion] | None = Field(default=None, description="inline questions (override the file)")
    as_of: datetime | None = Field(default=None, description="issue time (UTC); empty = now. For replays and demos")
    fetch_series: list[str] = Field(default_factory=list,
                                    description="FRED ids to fetch as new vintages first (needs network); empty = none")
    fred_key_secret: str | None = Field(default=None, description="name of a Prefect Secret block holding a FRED "
                                        "API key; empty = $FRED_API_KEY, else the public CSV export")


@flow(name="bind-forecasts", log_prints=True)
def bind_forecasts(params: LaneParameters = LaneParameters(), database_block: str | None = None,
                   providers_block: str | None = None) -> list[dict]:
    settings = resolve_settings(database_block, providers_block)
    issued_at = params.as_of or datetime.now(timezone.utc)
    if issued_at.tzinfo is None:
        issued_at = issued_at.replace(tzinfo=timezone.utc)
    questions = params.questions or load_questions(Path(params.question_file) if params.question_file
                                                        else data_file("forecast_lane.json"))
    if params.fetch_series:
        fetch_series(settings, params.fetch_series, params.fred_key_secret)
    check_lane_questions(settings, questions, issued_at)
    run_id = flow_run_id()
    results = [bind_lane_question(settings, spec, issued_at, run_id) for spec in questions]
    create_table_artifact(key="bound-forecasts", table=[{k: str(v) for k, v in r.items()} for r in results],
                          description=f"binding lane run issued at {issued_at.isoformat()}")
    bound = sum(r["status"] == "bound" for r in results)
    print(f"binding lane: {bound} bound, {len(results) - bound} already bound, issued at {issued_at.isoformat()}")
    return results
