"""The offline deliberation engine (the default; no network, no keys): extractive.

It writes no prose of its own. A persona's [SOURCED] claims are whole sentences copied from its
passages — the quote is the claim. A sentence qualifies by the weight of the question's content stems
it shares: each shared stem counts 1, a generic research word ("risk", "effect", "patients", …) counts
half, and a sentence needs a weight of `MIN_SHARED` (or all of a shorter question) including one
specific stem, so "reduces the risk of dementia" does not answer a question about fracture risk. A
heading (the document's title, a short line without end punctuation) never qualifies: it repeats the
question's words and answers nothing.

Among qualifying sentences the one that answers is preferred (`forum_atlas.deliberation.answers`): the
question asks for a kind of answer ("how much" a quantity with its unit, "how many" a count, "when" a
date, "who" a person or organisation) and a sentence that holds one the question does not already state
gains `ANSWER_WEIGHT`; a question of no kind (a claim to check) prefers a sentence that reports a finding
to one that only states an aim or a method. Ties go to the better-ranked passage, then the earlier
sentence. At most one sentence per passage and `MAX_SOURCED` per persona. The one connective statement
it adds says which passages it read together and is tagged [INFERRED]. When no sentence qualifies, it
answers "insufficient" with the reason instead of reaching for something loosely related. Same request,
same claims.
"""

from __future__ import annotations

import time

from forum_atlas.deliberation.answers import (
    AnswerKind,
    asked_kind,
    holds_answer,
    is_heading,
    reports_finding,
    states_only_aim_or_method,
)
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
ANSWER_WEIGHT = 1.5
FINDING_WEIGHT = 0.5
MAX_SOURCED = 3
MAX_SYNTHESIS_SOURCED = 3


def _weight(term_stem: str) -> float:
    return GENERIC_WEIGHT if term_stem in GENERIC_STEMS else 1.0


def _preference(kind: AnswerKind | None, sentence: str, question: str) -> float:
    """What a qualifying sentence gains for answering: the asked kind of answer, else a stated finding."""
    if kind is not None:
        return ANSWER_WEIGHT if holds_answer(kind, sentence, question) else 0.0
    if reports_finding(sentence):
        return FINDING_WEIGHT
    return -FINDING_WEIGHT if states_only_aim_or_method(sentence) else 0.0


def _relevant_sentences(question: str, passages: tuple[Passage, ...]) -> list[tuple[float, Passage, str]]:
    """(score, passage, sentence) for every passage's best qualifying sentence, best first."""
    wanted = stems(question)
    needed = min(MIN_SHARED, sum(_weight(s) for s in wanted))
    if not wanted:
        return []
    kind = asked_kind(question)
    best: list[tuple[float, int, int, Passage, str]] = []
    for order, passage in enumerate(passages):
        candidates = []
        for position, (start, end) in enumerate(sentence_spans(passage.text)):
            sentence = passage.text[start:end].strip()
            shared = wanted & stems(sentence)
            weight = sum(_weight(s) for s in shared)
            if (weight >= needed and shared - GENERIC_STEMS and len(sentence) >= 20
                    and not is_heading(sentence, passage.title)):
                score = weight + _preference(kind, sentence, question)
                candidates.append((-score, order, position, passage, sentence))
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
    # v2: the closing [INFERRED] statement reads as written for one source; v3: the answering sentence, not a heading
    version = "sentences-v3"
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
