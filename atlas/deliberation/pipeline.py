"""The deliberation DAG (DEL-1…8, AUD-1…4), written once: plan → retrieval per persona → the withheld
sources it would have matched → round 1 drafts → audit → retry where validation failed (stricter prompt)
→ re-audit → synthesis from the post-audit round only → audit of the synthesis → persist (one transaction).

What runs each stage is passed in, as for retrieval (`forum_atlas.retrieval.pipeline`):
`forum_atlas.tasks.deliberation.TaskStages` runs each as a Prefect task, so the deliberate flow's DAG
shows them; `PlainStages` runs the very same calls as plain functions (deliberate-batch's one task per
question, and the benchmark that separates Prefect's share of the time from the work's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.audit import (
    AUDIT_RULES,
    AuditedDraft,
    RoundEvidence,
    SynthesisBasis,
    needs_retry,
    retry_reasons,
    settle,
    synthesis_basis,
)
from forum_atlas.deliberation.brief import assemble, synthesis_request
from forum_atlas.deliberation.engine import DeliberationEngine
from forum_atlas.deliberation.model import (
    COORDINATOR,
    BriefRecord,
    BriefView,
    DraftReply,
    DraftRequest,
    Passage,
    Plan,
    ProviderUnreachable,
    SynthesisRequest,
)
from forum_atlas.entailment import VerifierChoice
from forum_atlas.retrieval.model import RetrievalOptions, RetrievalResult


@dataclass
class AuditedRound:
    drafts: dict[str, AuditedDraft]
    calls: list[CallRecord] = field(default_factory=list)   # the support verifier's


class DeliberationStages(Protocol):
    def plan(self, question: str, personas: Sequence[str] | None) -> Plan: ...

    def retrieve(self, query: str, options: RetrievalOptions) -> RetrievalResult: ...

    def withheld(self, results: Mapping[str, RetrievalResult]) -> list[dict[str, Any]]: ...

    def round_evidence(self, panel: Plan, results: Mapping[str, RetrievalResult]
                       ) -> tuple[RoundEvidence, dict[str, tuple[Passage, ...]]]: ...

    def drafts(self, requests: Mapping[str, DraftRequest]) -> dict[str, DraftReply]:
        """One draft per role — independent, so an implementation may run them concurrently."""
        ...

    def audit(self, replies: Mapping[str, DraftReply], evidence: RoundEvidence, attempt: int,
              basis: SynthesisBasis | None = None) -> AuditedRound: ...

    def synthesize(self, request: SynthesisRequest) -> DraftReply: ...

    def engine(self) -> DeliberationEngine: ...

    def verifier(self) -> VerifierChoice: ...

    def persist(self, record: BriefRecord) -> BriefView: ...

    def log_unreachable(self, question: str, error: ProviderUnreachable) -> None: ...


def deliberate(stages: DeliberationStages, question: str, personas: Sequence[str] | None, options: RetrievalOptions,
               run_id: Callable[[], str | None] = lambda: None,
               gathered: Mapping[str, Any] | None = None) -> BriefView:
    """A question in, a sealed and audited brief out. `gathered`: the gather-evidence run that preceded this
    brief, if one did. A provider that cannot be reached raises ProviderUnreachable after logging the call it
    tried: nothing is sealed."""
    created_at = datetime.now(UTC)
    panel = stages.plan(question, personas)
    results = {p.role: stages.retrieve(p.focus_query, options) for p in panel.personas}
    withheld = stages.withheld(results)
    evidence, passages = stages.round_evidence(panel, results)
    try:
        return _deliberate_panel(stages, panel, results, withheld, evidence, passages, created_at, run_id, gathered)
    except ProviderUnreachable as exc:  # an outage says nothing about the sources: no brief, the call logged
        stages.log_unreachable(panel.outbound_question, exc)
        raise


def _deliberate_panel(stages: DeliberationStages, panel: Plan, results: Mapping[str, RetrievalResult],
                      withheld: list[dict[str, Any]], evidence: RoundEvidence,
                      passages: Mapping[str, tuple[Passage, ...]], created_at: datetime,
                      run_id: Callable[[], str | None], gathered: Mapping[str, Any] | None) -> BriefView:
    requests = {p.role: DraftRequest(panel.outbound_question, p, passages[p.role]) for p in panel.personas}
    first = stages.audit(stages.drafts(requests), evidence, 1)
    retries = {role: DraftRequest(r.question, r.persona, r.passages, attempt=2, failures=retry_reasons(first.drafts[role]))
               for role, r in requests.items() if needs_retry(first.drafts[role])}
    second = stages.audit(stages.drafts(retries), evidence, 2) if retries else None

    engine = stages.engine()
    attempts = {role: [first.drafts[role]] + ([second.drafts[role]] if second and role in second.drafts else [])
                for role in requests}
    sections = [settle(p.role, p.topic, attempts[p.role], engine.name) for p in panel.personas]
    round_drafts = [d for r in (first, second) if r for d in r.drafts.values()]
    synthesis_reply = stages.synthesize(synthesis_request(panel, sections, evidence))
    final = stages.audit({COORDINATOR: synthesis_reply}, evidence, 1, synthesis_basis(sections, round_drafts))
    synthesis = settle(COORDINATOR, "the overall answer", [final.drafts[COORDINATOR]], engine.name)

    rounds = [r for r in (first, second, final) if r]
    drafts = [d for r in rounds for d in r.drafts.values()]
    calls = [d.call for d in drafts] + [c for r in rounds for c in r.calls]
    verifier = stages.verifier()
    record = assemble(panel, results, evidence, drafts, sections, synthesis,
                      {"deliberation": f"{engine.name} {engine.version}", "planner": panel.planner,
                       "support": verifier.describe(), "audit": AUDIT_RULES},
                      engine.extractive, calls, created_at, run_id(), gathered=gathered, withheld=withheld,
                      self_verified=verifier.self_verified)
    return stages.persist(record)
