"""Deliberate (DEL-1…8, AUD-1…4): a question in, an audited brief out.

[gather-evidence subflow, when `gather` is set] → the deliberation DAG (`forum_atlas.deliberation.pipeline`:
plan → retrieval per persona → drafts → audit → retry → synthesis → audit → persist), each stage a
Prefect task run → brief and audit artifacts.
"""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Cancelled

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.cancellation import RunCancelled
from forum_atlas.deliberation.render import render_markdown
from forum_atlas.run_names import brief_key, slug
from forum_atlas.tasks import flow_run_id, mark_flow_run
from forum_atlas.tasks.deliberation import DeliberationParameters, TaskStages, publish_brief_index, run_deliberation

__all__ = ["DeliberationParameters", "deliberate"]


def _run_name() -> str:
    """`brief-<slug of the question>` while it runs; renamed `brief-<id>-<slug>` once the brief is stored."""
    from prefect.runtime import flow_run

    params = flow_run.parameters.get("params")
    question = params.get("question") if isinstance(params, dict) else getattr(params, "question", "")
    return f"brief-{slug(question or '')}"


@flow(name="deliberate", flow_run_name=_run_name, log_prints=True)
def deliberate(params: DeliberationParameters, database_block: AtlasDatabase | None = None,
               providers_block: AtlasProviders | None = None) -> dict:
    """A question in, an audited brief out (the run form shows these descriptions).

    Args:
        params: the question, its filters and panel, the engine, and whether to gather evidence first
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment
        providers_block: the Forum Atlas Providers block (retrieval, LLM and verifier engines, API keys); empty =
            the worker's environment
    """
    settings = resolve_settings(database_block, providers_block).with_overrides(llm=params.engine)
    gathered = None
    if params.gather:
        # imported here: the gather flow pulls in the ingest flow (and great-expectations), ~1 s a plain ask skips
        from forum_atlas.flows.gather_evidence import GatherParameters, gather_evidence

        gathered = gather_evidence(GatherParameters(question=params.question, **params.gather_options.model_dump()),
                                   database_block, providers_block)
    try:
        view = run_deliberation(params, settings, TaskStages, flow_run_id, gathered)
    except RunCancelled as exc:   # the command that asked was killed: the run ends Cancelled, nothing sealed
        return Cancelled(message=str(exc))
    key = brief_key(view.brief_id, params.question)   # the UI finds the brief by its id or its question's words
    mark_flow_run(name=key)
    create_markdown_artifact(key=key, markdown=render_markdown(view), description=f"brief {view.brief_id}: "
                             f"{params.question}")
    create_table_artifact(key=f"brief-{view.brief_id}-audit", description=f"audit summary of brief {view.brief_id}",
                          table=[{"measure": k, "value": v} for k, v in view.audit.measures()])
    publish_brief_index(settings)
    print(f"brief {view.brief_id}: {view.audit.sourced_verified} verified [SOURCED], {view.audit.inferred} "
          f"[INFERRED], {view.audit.downgraded} downgraded, {view.audit.retried} retried; seal {view.seal[:16]}")
    return view.summary()
