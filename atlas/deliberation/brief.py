"""From retrieval results to the round's evidence, from sections to the synthesis request, and
from everything computed to the `BriefRecord` (with its evidence snapshot) that the store writes.

The evidence snapshot (AUD-3) holds what a reader needs to re-derive the brief: the de-identified
question and what was removed, the coordinator's plan, every retrieval stage's candidates, scores
and ranks per persona, the evidence-gathering run that preceded it (or that none ran), the
records retrieval would have matched but may not cite (retraction gate, licence guard) with why, the passages as the personas read them (source and document versions,
text and its digest), every attempt's claims with the audit's verdicts, the published sections,
engines with versions, prompt hashes and per-call outcomes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.audit import AuditedDraft, RoundEvidence, summarize
from forum_atlas.deliberation.model import (
    BriefRecord,
    Finding,
    Passage,
    Plan,
    Section,
    SynthesisRequest,
)
from forum_atlas.retrieval.model import RetrievalResult, Source


def _passage(label: str, source: Source) -> Passage:
    chunk = source.chunk
    return Passage(label=label, chunk_id=chunk.chunk_id, document_id=chunk.document_id,
                   document_version=chunk.document_version, title=chunk.title, text=source.context,
                   source_name=chunk.source_name, importance=chunk.importance, quality_score=chunk.quality_score,
                   url=chunk.url, published_at=chunk.published_at.isoformat() if chunk.published_at else None,
                   first_page=chunk.first_page, last_page=chunk.last_page, section=chunk.section, file=chunk.file,
                   reader=chunk.reader, also_in=tuple(copy.describe() for copy in chunk.also_in))


def round_passages(plan: Plan, results: Mapping[str, RetrievalResult]) -> tuple[RoundEvidence, dict[str, tuple[Passage, ...]]]:
    """The round's retrieved set with labels S1, S2, … in order of first appearance (personas in
    plan order, sources by rank), and each persona's own passages."""
    labelled: dict[int, Passage] = {}
    per_role: dict[str, tuple[Passage, ...]] = {}
    for persona in plan.personas:
        mine = []
        for source in results[persona.role].sources:
            passage = labelled.get(source.chunk.chunk_id)
            if passage is None:
                passage = labelled[source.chunk.chunk_id] = _passage(f"S{len(labelled) + 1}", source)
            mine.append(passage)
        per_role[persona.role] = tuple(mine)
    return RoundEvidence({p.label: p for p in labelled.values()}), per_role


def synthesis_request(plan: Plan, sections: Sequence[Section], evidence: RoundEvidence) -> SynthesisRequest:
    """Only the post-audit round (DEL-6): no downgraded claim, nothing from an insufficient section."""
    findings = tuple(Finding(s.role, c) for s in sections for c in s.synthesis_input())
    cited = {c.claim.chunk_id for c in findings if c.claim.chunk_id is not None}
    return SynthesisRequest(question=plan.outbound_question, findings=findings,
                            passages=tuple(p for p in evidence.passages.values() if p.chunk_id in cited),
                            insufficient_topics=tuple(s.topic for s in sections if s.insufficient))


def jsonable(value: Any) -> Any:
    """Plain JSON values (dates as ISO text), as the snapshot's canonical form needs."""
    return json.loads(json.dumps(value, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v)))


def _attempt(draft: AuditedDraft) -> dict[str, Any]:
    return {"role": draft.role, "attempt": draft.attempt, "claims": [asdict(c) for c in draft.claims],
            "insufficient": draft.insufficient, "malformed": draft.malformed, "failures": draft.failures,
            "call": draft.call.as_dict()}


def retrieval_calls(results: Mapping[str, RetrievalResult], flow_run_id: str | None = None) -> list[CallRecord]:
    """Each persona's retrieval stages as provider calls (AUD-4): the database's BM25, the query
    embedder, fusion, the reranker — engine, typed outcome, latency, attempts; the input is the
    query (its digest)."""
    calls = []
    for role, result in results.items():
        digest = hashlib.sha256(result.query.encode("utf-8")).hexdigest()
        for stage in result.stages:
            outcome = stage.outcome
            calls.append(CallRecord(
                stage=f"retrieval.{stage.stage}:{role}", provider=outcome.provider if outcome else stage.engine,
                version=f"{stage.engine} {stage.version}", input_digest=digest,
                outcome=outcome.kind if outcome else "ok", latency_ms=outcome.latency_ms if outcome else 0.0,
                attempts=outcome.attempts if outcome else 1, detail=(outcome.detail if outcome else "") or stage.note,
                flow_run_id=flow_run_id))
    return calls


GATHER_KEYS = ("run_id", "question", "removed", "plan", "outcomes", "source_versions", "ranked", "may_support",
               "excluded", "documents_added")


def gathering_record(gathered: Mapping[str, Any] | None) -> dict[str, Any]:
    """The snapshot's account of evidence gathering before the brief: the gather run (id, query plan,
    per-source outcomes, source versions, what became of the records), or that none ran."""
    if gathered is None:
        return {"ran": False}
    return {"ran": True, **{key: gathered[key] for key in GATHER_KEYS}}


def assemble(plan: Plan, results: Mapping[str, RetrievalResult], evidence: RoundEvidence,
             drafts: Sequence[AuditedDraft], sections: Sequence[Section], synthesis: Section,
             engines: Mapping[str, str], extractive: bool, calls: Sequence[CallRecord], created_at: datetime,
             flow_run_id: str | None = None, *, gathered: Mapping[str, Any] | None = None,
             withheld: Sequence[Mapping[str, Any]] = (), self_verified: bool = False) -> BriefRecord:
    """`gathered`: the gather-evidence run that preceded the brief (None: none ran); `withheld`: the
    records retrieval would have matched but may not return, with the reason; `self_verified`: the
    support verifier was the drafting model."""
    audit = summarize(sections, synthesis, drafts, self_verified)
    calls = [*retrieval_calls(results, flow_run_id), *calls]
    snapshot = jsonable({
        "question": plan.outbound_question,
        # kind, span and placeholder only: an unkeyed digest of a phone or record number could be
        # reversed by trying every value, so it stays out of the sealed (forever) snapshot
        "redactions": [{"kind": r.kind, "start": r.start, "end": r.end, "placeholder": r.placeholder}
                       for r in plan.redactions],
        "plan": {**plan.as_dict(), "redactions": len(plan.redactions)},
        "retrieval": {role: result.as_dict() for role, result in results.items()},
        "evidence_gathering": gathering_record(gathered),
        "withheld": [dict(row) for row in withheld],
        "passages": {p.label: {**asdict(p), "text_sha256": hashlib.sha256(p.text.encode("utf-8")).hexdigest()}
                     for p in evidence.passages.values()},
        "attempts": [_attempt(d) for d in drafts],
        "sections": [asdict(s) for s in sections],
        "synthesis": asdict(synthesis),
        "audit": audit.as_dict(),
        "engines": dict(engines),
        "calls": [c.as_dict() for c in calls],
        "created_at": created_at.isoformat(),
        "flow_run_id": flow_run_id,
    })
    return BriefRecord(question=plan.outbound_question, plan=plan, sections=list(sections), synthesis=synthesis,
                       audit=audit, downgrades=[d for draft in drafts for d in draft.downgrades], calls=list(calls),
                       passages=evidence.by_chunk, snapshot=snapshot, engines=dict(engines), extractive=extractive,
                       created_at=created_at, flow_run_id=flow_run_id)
