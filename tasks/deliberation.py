"""Deliberation tasks: plan, gather the round's evidence, draft (one task run per persona and
attempt), audit, synthesise, persist. Engines and verifiers are built from settings; every
provider call comes back as a `CallRecord` stamped with its Prefect flow and task run ids (AUD-4).

The deliberation DAG (`forum_atlas.flows.deliberate.deliberation`) runs them through `Steps`: as task runs, or as
the same calls without Prefect's task machinery.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from prefect import Task, task
from prefect.blocks.system import Secret
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from forum_atlas import cancellation
from forum_atlas.blocks.settings import secret_value
from forum_atlas.calls import CallRecord, digest_of
from forum_atlas.config import Settings
from forum_atlas.deliberation.audit import (
    AuditedRound,
    RoundEvidence,
    SynthesisBasis,
    audit_reply,
    support_pairs,
    verbatim_pairs,
)
from forum_atlas.deliberation.brief import round_passages
from forum_atlas.deliberation.engine import DeliberationEngine
from forum_atlas.deliberation.model import (
    SPECIALISTS,
    UNREACHABLE,
    BriefRecord,
    BriefView,
    DraftReply,
    DraftRequest,
    Passage,
    Plan,
    ProviderUnreachable,
    SynthesisRequest,
)
from forum_atlas.deliberation.plan import plan_panel
from forum_atlas.entailment import VerifierChoice, choose_verifier, make_support_verifier
from forum_atlas.entailment.base import SupportJudgement, SupportQuery, SupportVerifier
from forum_atlas.llm import make_deliberation_engine
from forum_atlas.providers import ProviderError
from forum_atlas.retrieval.model import RetrievalOptions, RetrievalResult
from forum_atlas.store import briefs
from forum_atlas.store.db import shared_database
from forum_atlas.tasks import flow_run_id, untraversed
from forum_atlas.tasks.evidence import GatherOptions
from forum_atlas.tasks.retrieval import retrieve_in_flow, retrieve_plain

deliberation_task = task(cache_policy=NO_CACHE, persist_result=False)


def engine_for(settings: Settings, key_secret: Secret | None = None) -> DeliberationEngine:
    """The configured engine; its API key from the Secret block the run picked, else the providers block's
    Secret field, else the SDK's environment variable (OPENAI_API_KEY)."""
    if settings.llm == "openai":
        return make_deliberation_engine("openai", model=settings.llm_model, api_key=_openai_key(settings, key_secret),
                                        options=settings.llm_options)
    return make_deliberation_engine(settings.llm)


def _openai_key(settings: Settings, key_secret: Secret | None) -> str | None:
    return secret_value(key_secret) or settings.api_keys.openai


def verifier_choice(settings: Settings) -> VerifierChoice:
    """Never the drafter (entailment.choose_verifier); the engine's endpoint is the SDK's OPENAI_BASE_URL."""
    return choose_verifier(settings, os.environ.get("OPENAI_BASE_URL"))


def verifier_for(settings: Settings, key_secret: Secret | None = None) -> SupportVerifier:
    choice = verifier_choice(settings)
    if choice.name == "openai":
        return make_support_verifier("openai", model=choice.model, base_url=choice.base_url,
                                     api_key=_openai_key(settings, key_secret), options=settings.llm_options)
    return make_support_verifier(choice.name)


def _stamped(call: CallRecord) -> CallRecord:
    from prefect.runtime import task_run

    return replace(call, flow_run_id=flow_run_id(), task_run_id=str(task_run.id) if task_run.id else None)


@deliberation_task(name="plan")
def plan(question: str, personas: Sequence[str] | None) -> Plan:
    """De-identify the question; the coordinator picks the specialists and their retrieval focus."""
    return plan_panel(question, personas)


@deliberation_task(name="round-evidence")
def round_evidence(panel: Plan, results: Mapping[str, RetrievalResult]) -> tuple[RoundEvidence, dict[str, tuple[Passage, ...]]]:
    return round_passages(panel, results)


def _failed_call(stage: str, engine: DeliberationEngine | SupportVerifier, request: object, exc: ProviderError,
                 started: float) -> CallRecord:
    """The failed call's record: the engine's own when it attached one (with its prompt hash). A
    provider that could not be reached stops the deliberation (ProviderUnreachable)."""
    call = exc.call if isinstance(getattr(exc, "call", None), CallRecord) else CallRecord(
        stage=stage, provider=engine.name, version=engine.version, input_digest=digest_of(request),
        outcome=exc.kind, latency_ms=(time.perf_counter() - started) * 1000, attempts=exc.attempts,
        detail=exc.detail[:500])
    if exc.kind in UNREACHABLE:
        raise ProviderUnreachable(_stamped(call)) from exc
    return call


@deliberation_task(name="draft", task_run_name="draft-{request.persona.role}-{request.attempt}")
def draft(settings: Settings, request: DraftRequest, key_secret: Secret | None = None) -> DraftReply:
    """One persona's claims. A provider that cannot be reached (timeout, rate limit, auth, outage)
    raises ProviderUnreachable; one that answers badly leaves the section with the typed outcome as
    its reason, never with invented text."""
    engine = engine_for(settings, key_secret)
    started = time.perf_counter()
    if not request.passages:
        reply = engine.draft(request)  # the engine states the absence itself; no passage, no claim
    else:
        try:
            reply = engine.draft(request)
        except ProviderError as exc:
            call = _failed_call(f"draft:{request.persona.role}#{request.attempt}", engine, request, exc, started)
            reply = DraftReply(claims=[], call=call, insufficient=f"the {engine.name} engine failed ({exc.kind})")
    reply.call = _stamped(reply.call)
    return reply


@deliberation_task(name="synthesis")
def synthesize(settings: Settings, request: SynthesisRequest, key_secret: Secret | None = None) -> DraftReply:
    engine = engine_for(settings, key_secret)
    started = time.perf_counter()
    if not request.findings:
        reply = DraftReply(claims=[], call=CallRecord(stage="synthesis", provider=engine.name, version=engine.version,
                                                      input_digest=digest_of(request), outcome="ok"),
                           insufficient="no section produced a claim the audit let through")
    else:
        try:
            reply = engine.synthesize(request)
        except ProviderError as exc:
            reply = DraftReply(claims=[], call=_failed_call("synthesis", engine, request, exc, started),
                               insufficient=f"the {engine.name} engine failed ({exc.kind})")
    reply.call = _stamped(reply.call)
    return reply


def _audit_run_name(parameters: dict[str, Any]) -> str:
    """From the resolved parameters: the run context's still hold the `untraversed` wrappers, so there every
    audit read as the synthesis's."""
    return "audit-synthesis" if parameters["basis"] is not None else f"audit-round-{parameters['attempt']}"


@deliberation_task(name="audit", task_run_name=_audit_run_name)
def audit(settings: Settings, replies: Mapping[str, DraftReply], evidence: RoundEvidence, attempt: int,
          key_secret: Secret | None = None, basis: SynthesisBasis | None = None) -> AuditedRound:
    """Check every [SOURCED] tag: safe text, retrieved in this round, quote verbatim (the database's
    `forum.citation_verbatim_matches`, one query for the round), grounded in its sentence, supported
    (the verifier). `basis`: for the synthesis, the findings it may cite."""
    pairs = verbatim_pairs(replies.values(), evidence)
    with shared_database(settings).connection() as conn:
        verbatim = dict(zip(pairs, briefs.verbatim_matches(conn, pairs)))
    to_judge = support_pairs(replies.values(), evidence, verbatim)
    judgement = _judge(settings, to_judge, evidence, key_secret)
    verdicts = dict(zip(to_judge, judgement.verdicts))
    drafts = {role: audit_reply(role, attempt, reply, evidence, verbatim, verdicts, basis)
              for role, reply in replies.items()}
    return AuditedRound(drafts, [_stamped(c) for c in judgement.calls])


def _judge(settings: Settings, items: Sequence[tuple[str, int, str]], evidence: RoundEvidence,
           key_secret: Secret | None) -> SupportJudgement:
    if not items:
        return SupportJudgement(verdicts=[])
    verifier = verifier_for(settings, key_secret)
    passages = evidence.by_chunk
    queries = [SupportQuery(claim=claim, quote=quote, passage=passages[chunk_id].text) for claim, chunk_id, quote in items]
    started = time.perf_counter()
    try:
        return verifier.judge(queries)
    except ProviderError as exc:  # a bad answer is no verdict, not a "supports": the verbatim check alone decides
        return SupportJudgement(verdicts=["abstain"] * len(items),
                                calls=[_failed_call("support", verifier, queries, exc, started)])


@deliberation_task(name="log-unreachable")
def log_unreachable(settings: Settings, question: str, error: ProviderUnreachable) -> None:
    """What was tried when a provider could not be reached: an audit event, and no brief."""
    briefs.record_unreachable(shared_database(settings), question, error.call)


@deliberation_task(name="persist-brief")
def persist(settings: Settings, record: BriefRecord) -> BriefView:
    """Write the brief, its claims, citations, snapshot, calls and events in one short transaction,
    then read it back as the reader will see it. Not when the command that asked has gone (a killed `atlas ask`)."""
    cancellation.check("sealing the brief")
    db = shared_database(settings)
    stored = briefs.persist_brief(db, record)
    return briefs.load_brief(db, stored.brief_id)


BRIEF_INDEX_LENGTH = 50


@deliberation_task(name="publish-brief-index")
def publish_brief_index(settings: Settings) -> None:
    """The `brief-index` markdown artifact: the newest briefs, with links to their artifacts and runs (its
    latest version is the one the UI's Artifacts page shows under that key)."""
    from prefect.artifacts import create_markdown_artifact

    from forum_atlas.run_names import brief_index_markdown
    from forum_atlas.tasks import ui_url

    rows = briefs.list_briefs(shared_database(settings), BRIEF_INDEX_LENGTH)
    create_markdown_artifact(key="brief-index", markdown=brief_index_markdown(rows, ui_url()),
                             description=f"the {len(rows)} newest briefs")


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


class Steps:
    """How the deliberation DAG runs its steps: as task runs of the flow that calls it (`TASK_RUNS`: the deliberate
    flow's graph shows each, drafts run concurrently, a killed command's run stops before the next step), or as the
    same functions called plainly (`PLAIN_CALLS`: inside one deliberate-batch task run per question, and the
    benchmark's measure of Prefect's share of a brief's time)."""

    def __init__(self, task_runs: bool):
        self.task_runs = task_runs

    def __call__(self, step: Task, *args: Any) -> Any:
        if not self.task_runs:
            return step.fn(*args)
        cancellation.check(f"the {step.name} step")
        return step(*untraversed(*args))

    def concurrently(self, step: Task, calls: Mapping[str, tuple]) -> dict[str, Any]:
        """`step` once per key, with that key's arguments: concurrent task runs, or plain calls one after another."""
        if not self.task_runs:
            return {name: step.fn(*args) for name, args in calls.items()}
        runs = {name: step.submit(*untraversed(*args)) for name, args in calls.items()}
        return {name: run.result() for name, run in runs.items()}

    def retrieve(self, settings: Settings, query: str, options: RetrievalOptions) -> RetrievalResult:
        """The retrieval pipeline, its own stages run the same way."""
        return (retrieve_in_flow if self.task_runs else retrieve_plain)(settings, query, options)


TASK_RUNS, PLAIN_CALLS = Steps(task_runs=True), Steps(task_runs=False)
