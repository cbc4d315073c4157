"""The audit verifier (DEL-3…7): every [SOURCED] tag is checked against the round's evidence.

A claim keeps [SOURCED] only if
  1. it carries a quote,
  2. its citation names a passage retrieved in this round (`S<n>` labels, or `chunk:<id>`),
  3. the quote occurs verbatim in that passage — decided by the database function
     `forum.citation_verbatim_matches` (whitespace normalised, case and punctuation preserved),
  4. the support verifier does not say the passage contradicts it or merely gives context.
Otherwise it is rewritten to [INFERRED] with the first failed check (a `Downgrade`, logged as a
SOURCED_TAGS_DOWNGRADED event).

Validation (DEL-5) is the citation discipline: a persona's answer fails it when it is malformed or
when a [SOURCED] claim fails checks 1–3. A failed answer is retried once with a stricter prompt; a
second failure makes the section "insufficient evidence on <topic>". A support verdict alone
downgrades the claim but does not fail validation: the verbatim validator does not judge whether a
claim follows from its quote.

This module is plain logic: the verbatim results and verdicts are computed by the caller (the
database and the verifier) and passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from forum_atlas.deliberation.model import (
    INFERRED,
    SOURCED,
    AuditedClaim,
    AuditSummary,
    CallRecord,
    Downgrade,
    DraftReply,
    FailedCheck,
    Passage,
    Section,
    Verdict,
)

_CHUNK_REF = re.compile(r"^chunk:(\d+)$")
CITATION_CHECKS: frozenset[FailedCheck] = frozenset({"no_quote", "unknown_source", "not_retrieved", "quote_not_verbatim"})
_REJECTING_VERDICTS: frozenset[Verdict] = frozenset({"contradicts", "contextual"})


@dataclass(frozen=True)
class RoundEvidence:
    """The round's retrieved set: every passage any persona's retrieval returned, by label."""
    passages: Mapping[str, Passage]

    @property
    def by_chunk(self) -> dict[int, Passage]:
        return {p.chunk_id: p for p in self.passages.values()}

    def resolve(self, label: str | None) -> tuple[Passage | None, FailedCheck | None, str]:
        """The passage a citation names, or the check it fails and why."""
        if not label:
            return None, "unknown_source", "the claim names no source"
        label = label.strip()
        if label in self.passages:
            return self.passages[label], None, ""
        match = _CHUNK_REF.match(label)
        if match:
            passage = self.by_chunk.get(int(match.group(1)))
            if passage is None:
                return None, "not_retrieved", f"{label} was not retrieved in this round"
            return passage, None, ""
        if re.fullmatch(r"S\d+", label):
            return None, "not_retrieved", f"{label} is not one of this round's {len(self.passages)} retrieved passages"
        return None, "unknown_source", f"{label!r} names no passage (cite S<n> or chunk:<id>)"


@dataclass
class AuditedDraft:
    """One persona's answer (one attempt) after the audit."""
    role: str
    attempt: int
    claims: list[AuditedClaim]
    downgrades: list[Downgrade]
    call: CallRecord
    insufficient: str | None = None
    malformed: str | None = None
    failures: list[str] = field(default_factory=list)   # validation failures in words (empty = valid)

    @property
    def valid(self) -> bool:
        return not self.malformed and not self.failures

    @property
    def sourced_claimed(self) -> int:
        return sum(c.claimed_tag == SOURCED for c in self.claims)


def verbatim_pairs(replies: Iterable[DraftReply], evidence: RoundEvidence) -> list[tuple[int, str]]:
    """(chunk id, quote) of every [SOURCED] claim whose citation resolves: what the database checks."""
    pairs = []
    for reply in replies:
        for claim in reply.claims:
            if claim.tag == SOURCED and claim.quote and claim.quote.strip():
                passage, failed, _ = evidence.resolve(claim.source_label)
                if passage is not None and failed is None:
                    pairs.append((passage.chunk_id, claim.quote))
    return list(dict.fromkeys(pairs))


def support_pairs(replies: Iterable[DraftReply], evidence: RoundEvidence,
                  verbatim: Mapping[tuple[int, str], bool]) -> list[tuple[str, int, str]]:
    """(claim, chunk id, quote) of every claim that passed checks 1–3: what the support verifier judges."""
    out = []
    for reply in replies:
        for claim in reply.claims:
            if claim.tag == SOURCED and claim.quote:
                passage, failed, _ = evidence.resolve(claim.source_label)
                if passage is not None and failed is None and verbatim.get((passage.chunk_id, claim.quote)):
                    out.append((claim.text, passage.chunk_id, claim.quote))
    return list(dict.fromkeys(out))


def audit_reply(role: str, attempt: int, reply: DraftReply, evidence: RoundEvidence,
                verbatim: Mapping[tuple[int, str], bool],
                verdicts: Mapping[tuple[str, int, str], Verdict]) -> AuditedDraft:
    claims: list[AuditedClaim] = []
    downgrades: list[Downgrade] = []
    failures: list[str] = []
    for draft in reply.claims:
        if draft.tag != SOURCED:
            claims.append(AuditedClaim(text=draft.text, claimed_tag=INFERRED, tag=INFERRED))
            continue
        passage, failed, detail = evidence.resolve(draft.source_label)
        verdict: Verdict | None = None
        if not (draft.quote and draft.quote.strip()):
            failed, detail = "no_quote", "a [SOURCED] claim must quote its passage"
        elif failed is None and passage is not None:
            if not verbatim.get((passage.chunk_id, draft.quote), False):
                failed, detail = "quote_not_verbatim", f"the quote is not found verbatim in {draft.source_label}"
            else:
                verdict = verdicts.get((draft.text, passage.chunk_id, draft.quote), "abstain")
                if verdict in _REJECTING_VERDICTS:
                    failed = verdict
                    detail = (f"the support verifier reads {draft.source_label} as "
                              f"{'contradicting' if verdict == 'contradicts' else 'only context for'} the claim")
        chunk_id = passage.chunk_id if passage is not None else None
        claims.append(AuditedClaim(text=draft.text, claimed_tag=SOURCED, tag=SOURCED if failed is None else INFERRED,
                                   chunk_id=chunk_id, source_label=draft.source_label, quote=draft.quote,
                                   verdict=verdict, failed=failed, detail=detail))
        if failed is not None:
            downgrades.append(Downgrade(role=role, attempt=attempt, claim=draft.text, chunk_id=chunk_id,
                                        source_label=draft.source_label, quote=draft.quote, failed=failed,
                                        detail=detail))
            if failed in CITATION_CHECKS:
                failures.append(f"{draft.source_label or 'a claim'}: {detail} (claim: {draft.text[:120]!r})")
    if not reply.malformed and not reply.insufficient and not reply.claims:
        failures.append("the answer has no claims and does not say the evidence is insufficient")
    return AuditedDraft(role=role, attempt=attempt, claims=claims, downgrades=downgrades, call=reply.call,
                        insufficient=reply.insufficient, malformed=reply.malformed, failures=failures)


def needs_retry(draft: AuditedDraft) -> bool:
    """A malformed answer or a failed citation is asked for once more, with a stricter prompt."""
    return not draft.valid and draft.attempt == 1


def retry_reasons(draft: AuditedDraft) -> tuple[str, ...]:
    return ((f"the answer was malformed: {draft.malformed}",) if draft.malformed else ()) + tuple(draft.failures)


def settle(role: str, topic: str, attempts: Sequence[AuditedDraft], engine: str) -> Section:
    """The published section from a persona's attempts (the last one counts)."""
    last = attempts[-1]
    section = Section(role=role, topic=topic, attempts=len(attempts), engine=engine)
    if not last.valid:
        what = f"malformed answer ({last.malformed})" if last.malformed else "; ".join(last.failures)
        section.insufficient = f"validation failed {'twice' if len(attempts) > 1 else 'once'}: {what}"
    elif last.insufficient:
        section.insufficient = last.insufficient
    else:
        section.claims = list(last.claims)
    return section


def summarize(sections: Sequence[Section], synthesis: Section, drafts: Sequence[AuditedDraft]) -> AuditSummary:
    """DEL-7 over the published brief (persona sections and synthesis); downgrades and retries
    over every attempt."""
    published = [c for s in (*sections, synthesis) if not s.insufficient for c in s.claims]
    return AuditSummary(
        sourced_verified=sum(c.tag == SOURCED for c in published),
        inferred=sum(c.tag == INFERRED for c in published),
        downgraded=sum(len(d.downgrades) for d in drafts),
        retried=sum(d.attempt == 2 for d in drafts),
        insufficient_sections=sum(bool(s.insufficient) for s in sections),
        sourced_claimed=sum(d.sourced_claimed for d in drafts),
    )
