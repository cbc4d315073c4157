"""Deliberate (DEL-1…8, AUD-1…4): a question in, an audited brief out.

plan → retrieval per persona (BM25 ∥ dense → fusion → rerank) → round 1 drafts → audit → retry
where validation failed (stricter prompt) → re-audit → synthesis from the post-audit round only →
audit of the synthesis → persist (one transaction) → brief and audit artifacts.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.deliberation.audit import needs_retry, retry_reasons, settle
from forum_atlas.deliberation.brief import assemble, synthesis_request
from forum_atlas.deliberation.model import COORDINATOR, SPECIALISTS, DraftRequest
from forum_atlas.deliberation.render import render_markdown
from forum_atlas.retrieval.model import RetrievalOptions
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.deliberation import audit, draft, engine_for, persist, plan, round_evidence, synthesize
from forum_atlas.tasks.retrieval import retrieve_in_flow

Specialist = Literal["legal_regulatory", "financial", "technical", "geospatial", "forecasting"]
assert set(Specialist.__args__) == set(SPECIALISTS)  # the run form's choices are the panel's


class DeliberationParameters(BaseModel):
    question: str = Field(min_length=3, max_length=4000, description="the question the brief answers")
    sectors: list[str] | None = Field(default=None, description="only sources in these sectors; empty = all")
    published_after: datetime | None = Field(default=None, description="recency window start (inclusive, UTC)")
    published_before: datetime | None = Field(default=None, description="recency window end (exclusive, UTC)")
    personas: list[Specialist] | None = Field(default=None, description="the specialists; empty = the coordinator decides")
    top_k: int = Field(default=10, ge=1, le=20, description="final sources per persona's retrieval (RET-4)")
    engine: Literal["offline", "openai"] | None = Field(default=None, description="LLM engine; empty = settings (offline)")
    llm_key_secret: str | None = Field(default=None, description="Prefect Secret block holding the LLM API key; "
                                       "empty = OPENAI_API_KEY")

    def retrieval_options(self) -> RetrievalOptions:
        return RetrievalOptions(top_k=self.top_k, sectors=tuple(self.sectors) if self.sectors else None,
                                published_after=self.published_after, published_before=self.published_before)


@flow(name="deliberate", log_prints=True)
def deliberate(params: DeliberationParameters, database_block: str | None = None,
               providers_block: str | None = None) -> dict:
    settings = resolve_settings(database_block, providers_block).with_overrides(llm=params.engine)
    key = params.llm_key_secret  # a Secret block's name; tasks read the value themselves
    created_at = datetime.now(timezone.utc)
    panel = plan(params.question, params.personas)
    results = {p.role: retrieve_in_flow(settings, p.focus_query, params.retrieval_options()) for p in panel.personas}
    evidence, passages = round_evidence(panel, results)

    requests = {p.role: DraftRequest(panel.outbound_question, p, passages[p.role]) for p in panel.personas}
    first = audit(settings, _drafts(settings, requests, key), evidence, 1, key)
    retries = {role: DraftRequest(r.question, r.persona, r.passages, attempt=2, failures=retry_reasons(first.drafts[role]))
               for role, r in requests.items() if needs_retry(first.drafts[role])}
    second = audit(settings, _drafts(settings, retries, key), evidence, 2, key) if retries else None

    engine = engine_for(settings, key)
    attempts = {role: [first.drafts[role]] + ([second.drafts[role]] if second and role in second.drafts else [])
                for role in requests}
    sections = [settle(p.role, p.topic, attempts[p.role], engine.name) for p in panel.personas]
    synthesis_reply = synthesize(settings, synthesis_request(panel, sections, evidence), key)
    final = audit(settings, {COORDINATOR: synthesis_reply}, evidence, 1, key)
    synthesis = settle(COORDINATOR, "the overall answer", [final.drafts[COORDINATOR]], engine.name)

    drafts = [d for r in (first, second, final) if r for d in r.drafts.values()]
    calls = [d.call for d in drafts] + [c for r in (first, second, final) if r for c in r.calls]
    record = assemble(panel, results, evidence, drafts, sections, synthesis,
                      {"deliberation": f"{engine.name} {engine.version}", "planner": panel.planner},
                      engine.extractive, calls, created_at, flow_run_id())
    view = persist(settings, record)

    create_markdown_artifact(key="brief", markdown=render_markdown(view), description=f"brief {view.brief_id}")
    create_table_artifact(key="brief-audit", description=f"audit summary of brief {view.brief_id}",
                          table=[{"measure": k, "value": v} for k, v in view.audit.as_dict().items()])
    print(f"brief {view.brief_id}: {view.audit.sourced_verified} verified [SOURCED], {view.audit.inferred} "
          f"[INFERRED], {view.audit.downgraded} downgraded, {view.audit.retried} retried; seal {view.seal[:16]}")
    return {"brief_id": view.brief_id, "snapshot_id": view.snapshot_id, "seal": view.seal, **view.audit.as_dict()}


def _drafts(settings, requests: dict[str, DraftRequest], key: str | None) -> dict:
    """Every persona's draft as its own task run, concurrently."""
    runs = {role: draft.submit(settings, request, key) for role, request in requests.items()}
    return {role: run.result() for role, run in runs.items()}
