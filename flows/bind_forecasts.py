"""Binding lane (FC-4/5): fetch a new vintage of every series its questions name, construct forecasts
from the configured question set and bind each at issue to its series, comparator, threshold/reference
and deadline. Its deployment ships paused.

Targets and deadlines are relative to the run: a question names no date, its target is the next period
the series has not published at issue and its deadline a number of days after that period ends (see
forecasting/lane.py), so the shipped question file binds something new every run that sees new data.

Every question is checked against the data visible at issue before anything is written; one bad
question fails the run with nothing bound.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_table_artifact
from prefect.blocks.system import Secret
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.forecasting.lane import LaneQuestion, load_questions
from forum_atlas.resources import data_file
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.forecasting import bind_lane_question, check_lane_questions, series_to_fetch
from forum_atlas.tasks.scoring import fetch_series, publish_fetch_outcomes, run_name_from


class LaneParameters(BaseModel):
    question_file: str | None = Field(default=None, min_length=1,
                                      description="JSON {questions: [...]}; empty = data/forecast_lane.json")
    questions: list[LaneQuestion] | None = Field(default=None, min_length=1, max_length=200,
                                                 description="inline questions (override the file)")
    as_of: datetime | None = Field(default=None, description="issue time (UTC); empty = now. For replays and demos")
    fetch_series: list[str] | None = Field(
        default=None, max_length=100,
        description="FRED ids to fetch as new vintages first; empty = for a live run (as_of empty), the questions' "
                    "series a new vintage could bind something for (none when every question is bound and no new "
                    "period can have been published), none for a replay; [] = fetch nothing")
    fred_key_secret: Secret | None = Field(default=None, description="the Secret block holding a FRED API key; "
                                           "empty = $FRED_API_KEY, else the public CSV export")


@flow(name="bind-forecasts", flow_run_name=run_name_from("bind-forecasts", "as_of"), log_prints=True)
def bind_forecasts(params: LaneParameters = LaneParameters(), database_block: AtlasDatabase | None = None,
                   providers_block: AtlasProviders | None = None) -> list[dict]:
    """Binding lane: fetch the questions' series, then construct and bind one forecast per question.

    Args:
        params: the questions (file or inline), the issue time and what to fetch first.
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment.
        providers_block: the Forum Atlas Providers block (evidence retrieval engines); empty = the environment.
    """
    settings = resolve_settings(database_block, providers_block)
    questions = params.questions or load_questions(Path(params.question_file) if params.question_file
                                                        else data_file("forecast_lane.json"))
    to_fetch = params.fetch_series
    if to_fetch is None:
        to_fetch = [] if params.as_of else series_to_fetch(settings, questions, datetime.now(timezone.utc))
    if to_fetch:
        publish_fetch_outcomes(fetch_series(settings, to_fetch, params.fred_key_secret), key="lane-fetch")
    # a live run issues after its fetch: a vintage is visible from the instant it was fetched
    issued_at = params.as_of or datetime.now(timezone.utc)
    if issued_at.tzinfo is None:
        issued_at = issued_at.replace(tzinfo=timezone.utc)
    check_lane_questions(settings, questions, issued_at)
    run_id = flow_run_id()
    results = [bind_lane_question(settings, spec, issued_at, run_id) for spec in questions]
    create_table_artifact(key="bound-forecasts", table=[{k: str(v) for k, v in r.items()} for r in results],
                          description=f"binding lane run issued at {issued_at.isoformat()}")
    bound = sum(r["status"] == "bound" for r in results)
    print(f"binding lane: {bound} bound, {len(results) - bound} already bound, issued at {issued_at.isoformat()}")
    return results
