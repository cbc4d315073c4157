"""The offline deliberation engine (the default; no network, no keys): extractive.

It writes no prose of its own. A persona's [SOURCED] claims are whole sentences copied from its
passages — the quote is the claim — chosen by the weight of the question's content stems they
share: each shared stem counts 1, a generic research word ("risk", "effect", "patients", …) counts
half, and a sentence needs a weight of `MIN_SHARED` (or all of a shorter question) including one
specific stem, so "reduces the risk of dementia" does not answer a question about fracture risk.
Ties go to the better-ranked passage, then the earlier sentence. At most one sentence per passage and `MAX_SOURCED` per persona. The one
connective statement it adds says which passages it read together and is tagged [INFERRED]. When no
sentence qualifies, it answers "insufficient" with the reason instead of reaching for something
loosely related. Same request, same claims.
"""

from __future__ import annotations

import time

from forum_atlas.deliberation.model import (
    INFERRED,
    SOURCED,
    CallRecord,
    ClaimDraft,
    DraftReply,
    DraftRequest,
    Passage,
    SynthesisRequest,
    digest_of,
)
from forum_atlas.deliberation.terms import stem, stems
from forum_atlas.ingestion.chunking import sentence_spans

MIN_SHARED = 2.0
GENERIC_WEIGHT = 0.5
# Stems (terms.stem) of words that most biomedical and policy sentences share whatever their topic.
GENERIC_STEMS = frozenset(stem(w) for w in """risk risks reduce reduces reduced reduction increase increased
    effect effects associated association patients study studies result results level levels higher lower
    significant significantly analysis data group groups treatment outcome outcomes factor factors cause
    caused role evidence change changes rate rates""".split())
MAX_SOURCED = 3
MAX_SYNTHESIS_SOURCED = 3


def _weight(term_stem: str) -> float:
    return GENERIC_WEIGHT if term_stem in GENERIC_STEMS else 1.0


def _relevant_sentences(question: str, passages: tuple[Passage, ...]) -> list[tuple[float, Passage, str]]:
    """(shared stems, passage, sentence) for every qualifying sentence, best first, one per passage."""
    wanted = stems(question)
    needed = min(MIN_SHARED, sum(_weight(s) for s in wanted))
    if not wanted:
        return []
    best: list[tuple[float, int, int, Passage, str]] = []
    for order, passage in enumerate(passages):
        candidates = []
        for position, (start, end) in enumerate(sentence_spans(passage.text)):
            sentence = passage.text[start:end].strip()
            shared = wanted & stems(sentence)
            weight = sum(_weight(s) for s in shared)
            if weight >= needed and shared - GENERIC_STEMS and len(sentence) >= 20:
                candidates.append((-weight, order, position, passage, sentence))
        if candidates:
            best.append(min(candidates, key=lambda c: c[:3]))
    best.sort(key=lambda c: c[:3])
    return [(-c[0], c[3], c[4]) for c in best]


def _bearing_statement(labels: list[str], topic: str) -> str:
    if len(labels) == 1:
        return (f"{labels[0]} bears on {topic}; that it answers the question as asked is the panel's inference, "
                "not a finding the source states.")
    return (f"Read together, {', '.join(labels)} bear on {topic}; that they answer the question as asked is the "
            "panel's inference, not a finding stated by any one source.")


class OfflineDeliberationEngine:
    name = "offline-extractive"
    version = "sentences-v2"  # v2: the closing [INFERRED] statement reads as written for one source
    extractive = True

    def _call(self, stage: str, request: DraftRequest | SynthesisRequest, started: float) -> CallRecord:
        return CallRecord(stage=stage, provider=self.name, version=self.version, input_digest=digest_of(request),
                          latency_ms=(time.perf_counter() - started) * 1000)

    def draft(self, request: DraftRequest) -> DraftReply:
        started = time.perf_counter()
        picked = _relevant_sentences(request.question, request.passages)[:MAX_SOURCED]
        call = self._call(f"draft:{request.persona.role}#{request.attempt}", request, started)
        if not picked:
            reason = (f"none of the {len(request.passages)} retrieved passages has a sentence that shares the "
                      "question's specific terms" if request.passages else "no passage was retrieved")
            return DraftReply(claims=[], call=call, insufficient=reason)
        claims = [ClaimDraft(text=sentence, tag=SOURCED, source_label=passage.label, quote=sentence)
                  for _, passage, sentence in picked]
        labels = [passage.label for _, passage, _ in picked]  # one sentence per passage
        claims.append(ClaimDraft(text=_bearing_statement(labels, request.persona.topic), tag=INFERRED))
        return DraftReply(claims=claims, call=call)

    def synthesize(self, request: SynthesisRequest) -> DraftReply:
        """The first verified finding of each section (distinct passages), then one [INFERRED]
        statement of how much of the question the panel could ground."""
        started = time.perf_counter()
        claims: list[ClaimDraft] = []
        used: set[int] = set()
        roles: set[str] = set()
        for finding in request.findings:
            claim = finding.claim
            if (claim.verified and finding.role not in roles and claim.chunk_id not in used
                    and len(claims) < MAX_SYNTHESIS_SOURCED):
                used.add(claim.chunk_id)
                roles.add(finding.role)
                claims.append(ClaimDraft(text=claim.text, tag=SOURCED, source_label=claim.source_label,
                                         quote=claim.quote))
        call = self._call("synthesis", request, started)
        if not claims:
            return DraftReply(claims=[], call=call, insufficient="no section produced a verified [SOURCED] claim")
        grounded = len({f.role for f in request.findings if f.claim.verified})
        sections = grounded + len(request.insufficient_topics)
        gaps = (f"; evidence was insufficient on {', '.join(request.insufficient_topics)}"
                if request.insufficient_topics else "")
        claims.append(ClaimDraft(
            text=(f"{grounded} of {sections} specialist sections found verbatim support in the retrieved passages{gaps}. "
                  "Whether the quoted findings settle the question is left to the reader: this brief is extractive."),
            tag=INFERRED))
        return DraftReply(claims=claims, call=call)
