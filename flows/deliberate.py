"""Deliberate (DEL-1…8, AUD-1…4): a question in, an audited brief out.

[gather-evidence subflow, when `gather` is set] → plan → retrieval per persona → the withheld sources it would
have matched → round evidence → round 1 drafts (one task run per persona, concurrently) → audit → retry where
validation failed (stricter prompt) → re-audit → synthesis from the post-audit round only → audit of the
synthesis → persist (one transaction) → brief and audit artifacts, the brief index.

`deliberation` is that DAG, written once. The flow runs its steps as task runs (`TASK_RUNS`), so the run's graph
shows each; the deliberate-batch flow runs the very same steps as plain calls (`PLAIN_CALLS`) inside one task run
per question, as do the benchmarks that separate Prefect's share of a brief's time from the work's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Cancelled

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.cancellation import RunCancelled
from forum_atlas.config import Settings
from forum_atlas.deliberation.audit import AUDIT_RULES, needs_retry, retry_reasons, settle, synthesis_basis
from forum_atlas.deliberation.brief import assemble, synthesis_request
from forum_atlas.deliberation.model import COORDINATOR, BriefView, DraftRequest, ProviderUnreachable
from forum_atlas.deliberation.render import render_markdown
from forum_atlas.run_names import brief_key, slug
from forum_atlas.tasks import flow_run_id, mark_flow_run
from forum_atlas.tasks.deliberation import (
    TASK_RUNS,
    DeliberationParameters,
    Steps,
    audit,
    draft,
    engine_for,
    log_unreachable,
    persist,
    plan,
    publish_brief_index,
    round_evidence,
    synthesize,
    verifier_choice,
)
from forum_atlas.tasks.evidence import withheld_sources

__all__ = ["DeliberationParameters", "deliberate", "deliberation"]


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
        view = deliberation(params, settings, TASK_RUNS, gathered)
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


def deliberation(params: DeliberationParameters, settings: Settings, steps: Steps,
                 gathered: Mapping[str, Any] | None = None) -> BriefView:
    """The DAG: a question in, a sealed and audited brief out, its steps run by `steps`. `gathered`: the
    gather-evidence run that preceded this brief, if one did. A provider that cannot be reached raises
    ProviderUnreachable after logging the call it tried: nothing is sealed."""
    created_at = datetime.now(UTC)
    key_secret = params.llm_key_secret   # the tasks read its value when they call
    options = params.retrieval_options()
    panel = steps(plan, params.question, params.personas)
    results = {p.role: steps.retrieve(settings, p.focus_query, options) for p in panel.personas}
    withheld = steps(withheld_sources, settings, results)
    evidence, passages = steps(round_evidence, panel, results)
    try:
        requests = {p.role: DraftRequest(panel.outbound_question, p, passages[p.role]) for p in panel.personas}
        replies = steps.concurrently(draft, {role: (settings, r, key_secret) for role, r in requests.items()})
        first = steps(audit, settings, replies, evidence, 1, key_secret)
        retries = {role: DraftRequest(r.question, r.persona, r.passages, attempt=2,
                                      failures=retry_reasons(first.drafts[role]))
                   for role, r in requests.items() if needs_retry(first.drafts[role])}
        second = None
        if retries:
            replies = steps.concurrently(draft, {role: (settings, r, key_secret) for role, r in retries.items()})
            second = steps(audit, settings, replies, evidence, 2, key_secret)

        engine = engine_for(settings, key_secret)
        attempts = {role: [first.drafts[role]] + ([second.drafts[role]] if second and role in second.drafts else [])
                    for role in requests}
        sections = [settle(p.role, p.topic, attempts[p.role], engine.name) for p in panel.personas]
        round_drafts = [d for r in (first, second) if r for d in r.drafts.values()]
        synthesis_reply = steps(synthesize, settings, synthesis_request(panel, sections, evidence), key_secret)
        final = steps(audit, settings, {COORDINATOR: synthesis_reply}, evidence, 1, key_secret,
                      synthesis_basis(sections, round_drafts))
        synthesis = settle(COORDINATOR, "the overall answer", [final.drafts[COORDINATOR]], engine.name)

        rounds = [r for r in (first, second, final) if r]
        drafts = [d for r in rounds for d in r.drafts.values()]
        calls = [d.call for d in drafts] + [c for r in rounds for c in r.calls]
        verifier = verifier_choice(settings)
        record = assemble(panel, results, evidence, drafts, sections, synthesis,
                          {"deliberation": f"{engine.name} {engine.version}", "planner": panel.planner,
                           "support": verifier.describe(), "audit": AUDIT_RULES},
                          engine.extractive, calls, created_at, flow_run_id(), gathered=gathered, withheld=withheld,
                          self_verified=verifier.self_verified)
        return steps(persist, settings, record)
    except ProviderUnreachable as exc:  # an outage says nothing about the sources: no brief, the call logged
        steps(log_unreachable, settings, panel.outbound_question, exc)
        raise
