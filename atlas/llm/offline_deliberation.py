"""The offline deliberation engine (the default; no network, no keys): extractive.

It writes no prose of its own. A persona's [SOURCED] claims are whole sentences copied from its
passages — the quote is the claim. A sentence qualifies by the weight of the question's content stems
it shares: each shared stem counts 1, a generic research word ("risk", "effect", "patients", …) counts
half, and a sentence needs a weight of `MIN_SHARED` (or all of a shorter question) including one
specific stem, so "reduces the risk of dementia" does not answer a question about fracture risk. A
heading (the document's title, a short line without end punctuation) never qualifies: it repeats the
question's words and answers nothing.

Qualifying sentences are ranked by the question stems they share, each weighted by how specific it is
among the passages' sentences (log(1 + sentences / sentences holding it): the topic's words, in nearly
all of them, count little; the words that set the answer apart count most), scaled so a sentence with
every stem scores the question's whole weight. The one that answers gains `ANSWER_WEIGHT`
(`forum_atlas.deliberation.answers`): the question asks for a kind of answer ("how much" a quantity with
its unit, "how many" a count, "when" a date, "who" a person or organisation) and the sentence holds one
the question does not already state; for a question of no kind (a claim to check) the sentence reports
a finding — and one that only states an aim or a method loses as much. Ties go to the better-ranked
passage, then the earlier sentence.

At most one sentence per passage and `MAX_SOURCED` per persona. The one connective statement it adds
says which passages it read together and is tagged [INFERRED]. When no sentence qualifies, it answers
"insufficient" with the reason instead of reaching for something loosely related. Same request, same
claims.
"""

from __future__ import annotations

import math
import time
from collections import Counter

from forum_atlas.calls import CallRecord, digest_of
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
    ClaimDraft,
    DraftReply,
    DraftRequest,
    Passage,
    SynthesisRequest,
)
from forum_atlas.text import sentence_spans, stem, stems

MIN_SHARED = 2.0
GENERIC_WEIGHT = 0.5
# Stems (terms.stem) of words that most biomedical and policy sentences share whatever their topic.
GENERIC_STEMS = frozenset(stem(w) for w in """risk risks reduce reduces reduced reduction increase increased
    effect effects associated association patients study studies result results level levels higher lower
    significant significantly analysis data group groups treatment outcome outcomes factor factors cause
    caused role evidence change changes rate rates""".split())
ANSWER_WEIGHT = 1.5
MAX_SOURCED = 3
MAX_SYNTHESIS_SOURCED = 3


def _weight(term_stem: str) -> float:
    return GENERIC_WEIGHT if term_stem in GENERIC_STEMS else 1.0


def _preference(kind: AnswerKind | None, sentence: str, question: str) -> float:
    """What a qualifying sentence gains for answering: the asked kind of answer, else a stated finding
    (and what it loses for stating only an aim or a method)."""
    if kind is not None:
        return ANSWER_WEIGHT if holds_answer(kind, sentence, question) else 0.0
    if reports_finding(sentence):
        return ANSWER_WEIGHT
    return -ANSWER_WEIGHT if states_only_aim_or_method(sentence) else 0.0


def _relevant_sentences(question: str, passages: tuple[Passage, ...]) -> list[tuple[float, Passage, str]]:
    """(score, passage, sentence) for every passage's best qualifying sentence, best first."""
    wanted = stems(question)
    needed = min(MIN_SHARED, sum(_weight(s) for s in wanted))
    sentences = [(order, position, passage, sentence, wanted & stems(sentence))
                 for order, passage in enumerate(passages)
                 for position, sentence in enumerate(passage.text[a:b].strip() for a, b in sentence_spans(passage.text))]
    if not wanted or not sentences:
        return []
    kind = asked_kind(question)
    # How specific each question stem is among these sentences: log(1 + N / sentences holding it). The
    # topic's words are in most of them and tell them apart hardly at all.
    holding = Counter(t for *_, shared in sentences for t in shared)
    specific = {t: _weight(t) * math.log(1 + len(sentences) / max(holding[t], 1)) for t in wanted}
    scale = sum(_weight(t) for t in wanted) / sum(specific.values())
    best: dict[int, tuple[float, int, int, Passage, str]] = {}
    for order, position, passage, sentence, shared in sentences:
        weight = sum(_weight(s) for s in shared)
        if (weight >= needed and shared - GENERIC_STEMS and len(sentence) >= 20
                and not is_heading(sentence, passage.title)):
            score = scale * sum(specific[t] for t in shared) + _preference(kind, sentence, question)
            candidate = (-score, order, position, passage, sentence)
            if order not in best or candidate[:3] < best[order][:3]:
                best[order] = candidate
    ranked = sorted(best.values(), key=lambda c: c[:3])
    return [(-c[0], c[3], c[4]) for c in ranked]


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
