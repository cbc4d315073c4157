"""Deliberate a batch of questions (issue 13, item 7): [database-for-workers, on Dask] → deliberate-question per
question, on the flow's task runner — threads by default, or a Dask cluster (`forum_atlas.runtime.task_runners`)
whose workers deliberate several questions at once → the batch's table artifact → the brief index.

A question's task run is the deliberate flow's DAG (`forum_atlas.flows.deliberate.deliberation`) as plain calls, so
that DAG is written once; the task is defined here rather than in `tasks/`, because it runs a flow's DAG (tasks
never import flows).

Unlike ingestion's prepare step, a deliberation reads and writes the database (retrieval, the verbatim
audit, persist): each worker opens its own connections to the database the run's settings name. When they
name none (the embedded server), the flow's process starts that server first and hands the workers its URL,
so that they join it rather than start servers of their own. Each brief persists in its own transaction: a
question that fails loses nothing of the others, and the run ends Failed naming it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any

from prefect import flow, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from pydantic import Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.config import Settings
from forum_atlas.deliberation.model import AuditSummary
from forum_atlas.flows.deliberate import DeliberationParameters, deliberation
from forum_atlas.runtime.task_runners import describe, in_process, task_runner_from_env
from forum_atlas.tasks.deliberate_batch import database_for_workers
from forum_atlas.tasks.deliberation import PLAIN_CALLS, publish_brief_index

MAX_QUESTIONS = 100
SEAL_CHARS = 16
NAME_CHARS = 60   # of the question, in the task run's name
AUDIT_COUNTS = [f.name for f in fields(AuditSummary)]


class BatchFailed(RuntimeError):
    """Some questions of the batch failed; the others' briefs are persisted. `rows`: the batch's table."""

    def __init__(self, message: str, rows: list[dict] | None = None):
        super().__init__(message)
        self.rows = rows or []


def _question_run_name(parameters: dict[str, Any]) -> str:
    question = parameters["params"].question
    return "deliberate: " + (question if len(question) <= NAME_CHARS else question[:NAME_CHARS - 1] + "…")


@task(name="deliberate-question", task_run_name=_question_run_name, cache_policy=NO_CACHE, persist_result=False)
def deliberate_question(params: DeliberationParameters, settings: Settings) -> dict[str, Any]:
    """One question's brief, persisted in its own transaction; returns what the batch's table shows."""
    return deliberation(params, settings, PLAIN_CALLS).summary()


# A deployment picks Dask through the flow-run process's environment; tests and benchmarks use `with_options`.
@flow(name="deliberate-batch", log_prints=True, task_runner=task_runner_from_env())
def deliberate_batch(
    questions: Annotated[list[DeliberationParameters], Field(min_length=1, max_length=MAX_QUESTIONS)],
    database_block: AtlasDatabase | None = None,
    providers_block: AtlasProviders | None = None,
) -> dict:
    """Deliberate several questions at once, one audited brief each (the run form shows these descriptions).

    Args:
        questions: 1 to 100 questions, each with the deliberate flow's options (sectors, recency, personas,
            top_k, engine); `gather` is refused: run the gather-evidence flow first
        database_block: the Forum Atlas Database block; empty = the worker's ATLAS_* environment. Dask workers
            connect to it themselves, so it must be reachable from them
        providers_block: the Forum Atlas Providers block (engines, API keys); empty = the worker's environment
    """
    gathering = [p.question for p in questions if p.gather]
    if gathering:
        raise ValueError(f"a batch does not gather evidence (run the gather-evidence flow first, or the deliberate "
                         f"flow for that question); `gather` is set for: {'; '.join(gathering)}")
    runner = FlowRunContext.get().task_runner
    settings = resolve_settings(database_block, providers_block)
    if not in_process(runner):
        settings = database_for_workers(settings)
    runs = [deliberate_question.submit(p, settings.with_overrides(llm=p.engine)) for p in questions]

    rows, failed = [], []
    for params, run in zip(questions, runs):
        try:
            brief = run.result()
        except Exception as exc:  # noqa: BLE001 — one question's failure is reported, the others' briefs stand
            failed.append(params.question)
            brief = dict.fromkeys(["brief_id", "seal", *AUDIT_COUNTS], "")
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"   # one readable line in the table
        else:
            error = ""
        rows.append({"question": params.question, "brief": brief["brief_id"], "seal": brief["seal"][:SEAL_CHARS],
                     **{k: brief[k] for k in AUDIT_COUNTS}, "error": error})
    create_table_artifact(key="deliberate-batch", table=rows,
                          description=f"{len(questions) - len(failed)} of {len(questions)} briefs persisted")
    print(f"{len(questions) - len(failed)} of {len(questions)} briefs persisted on {describe(runner)}")
    if len(failed) < len(questions):
        publish_brief_index(settings)
    if failed:
        raise BatchFailed(f"{len(failed)} of {len(questions)} questions failed (the other briefs are persisted): "
                          + "; ".join(failed), rows)
    return {"questions": len(questions), "briefs": [row["brief"] for row in rows],
            "task_runner": describe(runner), "results": rows}
