"""Deliberate (DEL-1…8, AUD-1…4): a question in, an audited brief out.

[gather-evidence subflow, when `gather` is set] → plan → retrieval per persona (BM25 ∥ dense → fusion →
rerank) → the withheld sources it would have matched → round 1 drafts → audit → retry
where validation failed (stricter prompt) → re-audit → synthesis from the post-audit round only →
audit of the synthesis → persist (one transaction) → brief and audit artifacts.

`run_deliberation` is that DAG, written once. The flow runs each step as a Prefect task
(`AS_TASKS`); the benchmark runs the very same steps as plain calls (`PLAIN`) to separate
Prefect's share of the time from the work's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from prefect import Task, flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.blocks.system import Secret
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.config import Settings
from forum_atlas.deliberation.audit import (
    AUDIT_RULES,
    RoundEvidence,
    needs_retry,
    retry_reasons,
    settle,
    synthesis_basis,
)
from forum_atlas.deliberation.brief import assemble, synthesis_request
from forum_atlas.deliberation.model import (
    COORDINATOR,
    SPECIALISTS,
    BriefView,
    DraftRequest,
    Passage,
    Plan,
    ProviderUnreachable,
)
from forum_atlas.deliberation.render import render_markdown
from forum_atlas.flows.gather_evidence import GatherOptions, GatherParameters, gather_evidence
from forum_atlas.retrieval.model import RetrievalOptions, RetrievalResult
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.deliberation import (
    audit,
    draft,
    engine_for,
    log_unreachable,
    persist,
    plan,
    round_evidence,
    synthesize,
    verifier_choice,
)
from forum_atlas.tasks.evidence import withheld_sources
from forum_atlas.tasks.retrieval import retrieve_in_flow, retrieve_plain

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
    llm_key_secret: Secret | None = Field(default=None, description="the Secret block holding the LLM API key; "
                                          "empty = the providers block's, else $OPENAI_API_KEY")
    gather: bool = Field(default=False, description="first gather evidence from the open sources for this question "
                         "(the gather-evidence flow, as a subflow; its run is recorded in the brief's snapshot)")
    gather_options: GatherOptions = Field(default_factory=GatherOptions,
                                          description="how to gather when `gather` is set: sources, filters, limits")

    def retrieval_options(self) -> RetrievalOptions:
        return RetrievalOptions(top_k=self.top_k, sectors=tuple(self.sectors) if self.sectors else None,
                                published_after=self.published_after, published_before=self.published_before)


@dataclass(frozen=True)
class Steps:
    """How each step runs: as a Prefect task (concurrent where the DAG allows) or as a plain call."""
    as_tasks: bool

    def __call__(self, step: Task, *args: Any) -> Any:
        return step(*args) if self.as_tasks else step.fn(*args)

    def each(self, step: Task, calls: Mapping[str, tuple]) -> dict[str, Any]:
        if not self.as_tasks:
            return {key: step.fn(*args) for key, args in calls.items()}
        runs = {key: step.submit(*args) for key, args in calls.items()}
        return {key: run.result() for key, run in runs.items()}

    def retrieve(self, settings: Settings, query: str, options: RetrievalOptions) -> RetrievalResult:
        return (retrieve_in_flow if self.as_tasks else retrieve_plain)(settings, query, options)


AS_TASKS, PLAIN = Steps(as_tasks=True), Steps(as_tasks=False)


def run_deliberation(params: DeliberationParameters, settings: Settings, step: Steps,
                     run_id: Callable[[], str | None] = lambda: None,
                     gathered: Mapping[str, Any] | None = None) -> BriefView:
    """`gathered`: the gather-evidence run that preceded this brief, if one did. A provider that
    cannot be reached raises ProviderUnreachable after logging the call it tried: nothing is sealed."""
    created_at = datetime.now(timezone.utc)
    panel = step(plan, params.question, params.personas)
    results = {p.role: step.retrieve(settings, p.focus_query, params.retrieval_options()) for p in panel.personas}
    withheld = step(withheld_sources, settings, results)
    evidence, passages = step(round_evidence, panel, results)

    try:
        return _deliberate_panel(params, settings, step, run_id, gathered, created_at, panel, results, withheld,
                                 evidence, passages)
    except ProviderUnreachable as exc:  # an outage says nothing about the sources: no brief, the call logged
        step(log_unreachable, settings, panel.outbound_question, exc)
        raise


def _deliberate_panel(params: DeliberationParameters, settings: Settings, step: Steps,
                      run_id: Callable[[], str | None], gathered: Mapping[str, Any] | None, created_at: datetime,
                      panel: Plan, results: Mapping[str, RetrievalResult], withheld: Any, evidence: RoundEvidence,
                      passages: Mapping[str, tuple[Passage, ...]]) -> BriefView:
    key = params.llm_key_secret  # tasks read its value themselves, when they call the provider
    requests = {p.role: DraftRequest(panel.outbound_question, p, passages[p.role]) for p in panel.personas}
    first = step(audit, settings, step.each(draft, {r: (settings, q, key) for r, q in requests.items()}), evidence, 1, key)
    retries = {role: DraftRequest(r.question, r.persona, r.passages, attempt=2, failures=retry_reasons(first.drafts[role]))
               for role, r in requests.items() if needs_retry(first.drafts[role])}
    second = (step(audit, settings, step.each(draft, {r: (settings, q, key) for r, q in retries.items()}), evidence, 2, key)
              if retries else None)

    engine = engine_for(settings, key)
    attempts = {role: [first.drafts[role]] + ([second.drafts[role]] if second and role in second.drafts else [])
                for role in requests}
    sections = [settle(p.role, p.topic, attempts[p.role], engine.name) for p in panel.personas]
    round_drafts = [d for r in (first, second) if r for d in r.drafts.values()]
    synthesis_reply = step(synthesize, settings, synthesis_request(panel, sections, evidence), key)
    final = step(audit, settings, {COORDINATOR: synthesis_reply}, evidence, 1, key, synthesis_basis(sections, round_drafts))
    synthesis = settle(COORDINATOR, "the overall answer", [final.drafts[COORDINATOR]], engine.name)

    rounds = [r for r in (first, second, final) if r]
    drafts = [d for r in rounds for d in r.drafts.values()]
    calls = [d.call for d in drafts] + [c for r in rounds for c in r.calls]
    verifier = verifier_choice(settings)
    record = assemble(panel, results, evidence, drafts, sections, synthesis,
                      {"deliberation": f"{engine.name} {engine.version}", "planner": panel.planner,
                       "support": verifier.describe(), "audit": AUDIT_RULES},
                      engine.extractive, calls, created_at, run_id(), gathered=gathered, withheld=withheld,
                      self_verified=verifier.self_verified)
    return step(persist, settings, record)


@flow(name="deliberate", log_prints=True)
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
    gathered = (gather_evidence(GatherParameters(question=params.question, **params.gather_options.model_dump()),
                                database_block, providers_block) if params.gather else None)
    view = run_deliberation(params, settings, AS_TASKS, flow_run_id, gathered)
    create_markdown_artifact(key="brief", markdown=render_markdown(view), description=f"brief {view.brief_id}")
    create_table_artifact(key="brief-audit", description=f"audit summary of brief {view.brief_id}",
                          table=[{"measure": k, "value": v} for k, v in view.audit.measures()])
    print(f"brief {view.brief_id}: {view.audit.sourced_verified} verified [SOURCED], {view.audit.inferred} "
          f"[INFERRED], {view.audit.downgraded} downgraded, {view.audit.retried} retried; seal {view.seal[:16]}")
    return view.summary()
