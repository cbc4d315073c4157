"""The audit verifier (DEL-3…7): every [SOURCED] tag is checked against the round's evidence.

A claim keeps [SOURCED] only if
  0. its text and quote are safe model output (atlas.deliberation.untrusted: bounded, no NUL,
     surrogate, control or invisible character, no tag-like text) — else `unsafe_text`,
  1. it carries a quote,
  2. its citation names a passage retrieved in this round (`S<n>` labels, or `chunk:<id>`),
  3. the quote occurs verbatim in that passage — decided by the database function
     `forum.citation_verbatim_matches` (whole words, whitespace normalised, case and punctuation
     preserved),
  4. in the synthesis: it cites a finding that survived the audit, with that finding's own quote,
     and is not a claim the rounds downgraded (`not_in_findings`); a synthesis claim that repeats
     that finding's claim text (whitespace aside) was audited already, any other text is audited
     against the quote like a finding,
  5. the quote, read in its sentence, supports the claim (atlas.deliberation.grounding: an
     informative quote, the claim covered, directions agreeing, and a faithful restatement —
     atlas.deliberation.faithful: order, numbers, frames, polarity),
  6. the support verifier does not say the passage contradicts it or merely gives context; where
     it abstains, the rules must be able to vouch for the claim alone (else `not_verifiable`).
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
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from forum_atlas.calls import CallRecord, Verdict
from forum_atlas.deliberation.grounding import GROUNDING_RULES, ground
from forum_atlas.deliberation.model import (
    INFERRED,
    SOURCED,
    AuditedClaim,
    AuditSummary,
    ClaimDraft,
    Downgrade,
    DraftReply,
    FailedCheck,
    Passage,
    Section,
)
from forum_atlas.deliberation.quotes import VERBATIM_RULE
from forum_atlas.deliberation.untrusted import (
    MAX_QUOTE_CHARS,
    clean_claim,
    clean_note,
    quote_problem,
    unsafe_characters,
)

# The rules a brief is audited under, recorded in its sealed engines ("audit"); `atlas verify` re-checks
# its citations with the verbatim rule named here (briefs without it were sealed under substring-v1).
AUDIT_RULES = f"{VERBATIM_RULE} {GROUNDING_RULES}"
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


@dataclass
class AuditedRound:
    """A round's drafts after the audit, with the support verifier's calls."""
    drafts: dict[str, AuditedDraft]
    calls: list[CallRecord] = field(default_factory=list)


@dataclass(frozen=True)
class SynthesisBasis:
    """What the synthesis may cite (DEL-6): the (chunk id, quote) of every finding that survived the
    post-audit round, and the claims any round downgraded (normalised text), which may not come back;
    `findings`: each surviving finding's (chunk id, quote, claim text with whitespace normalised)."""
    citations: frozenset[tuple[int, str]] = frozenset()
    downgraded: frozenset[str] = frozenset()
    findings: frozenset[tuple[int, str, str]] = frozenset()


def _said(text: str) -> str:
    return " ".join(text.split()).rstrip(" .;:!").casefold()


def synthesis_basis(sections: Sequence[Section], drafts: Sequence[AuditedDraft]) -> SynthesisBasis:
    """A claim downgraded in one attempt but verified in the published section stays citable."""
    verified = [c for s in sections for c in s.synthesis_input() if c.verified]
    return SynthesisBasis(
        citations=frozenset((c.chunk_id, c.quote) for c in verified if c.chunk_id is not None and c.quote is not None),
        downgraded=frozenset(_said(c.text) for d in drafts for c in d.claims if c.downgraded)
        - {_said(c.text) for c in verified},
        findings=frozenset((c.chunk_id, c.quote, _spaced(c.text)) for c in verified
                           if c.chunk_id is not None and c.quote is not None))


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _citable(claim: ClaimDraft) -> bool:
    """A [SOURCED] claim whose quote may be sent to the database and the verifier at all."""
    return (claim.tag == SOURCED and bool(claim.quote and claim.quote.strip()) and quote_problem(claim.quote) is None
            and not clean_claim(claim.text).problems)


def verbatim_pairs(replies: Iterable[DraftReply], evidence: RoundEvidence) -> list[tuple[int, str]]:
    """(chunk id, quote) of every [SOURCED] claim whose citation resolves: what the database checks."""
    pairs = []
    for reply in replies:
        for claim in reply.claims:
            if _citable(claim):
                passage, failed, _ = evidence.resolve(claim.source_label)
                if passage is not None and failed is None:
                    pairs.append((passage.chunk_id, claim.quote))
    return list(dict.fromkeys(pairs))


def support_pairs(replies: Iterable[DraftReply], evidence: RoundEvidence,
                  verbatim: Mapping[tuple[int, str], bool]) -> list[tuple[str, int, str]]:
    """(claim, chunk id, quote) of every claim that passed the citation and grounding checks: what the
    support verifier judges."""
    out = []
    for reply in replies:
        for claim in reply.claims:
            if _citable(claim):
                passage, failed, _ = evidence.resolve(claim.source_label)
                if (passage is not None and failed is None and verbatim.get((passage.chunk_id, claim.quote))
                        and ground(claim.text, claim.quote, passage.text).failed is None):
                    out.append((claim.text, passage.chunk_id, claim.quote))
    return list(dict.fromkeys(out))


def _check(draft: ClaimDraft, passage: Passage | None, failed: FailedCheck | None, detail: str,
           verbatim: Mapping[tuple[int, str], bool], verdicts: Mapping[tuple[str, int, str], Verdict],
           basis: SynthesisBasis | None) -> tuple[FailedCheck | None, str, Verdict | None]:
    """The first check a [SOURCED] claim fails (with why), and the verifier's verdict where it was asked."""
    text = clean_claim(draft.text)
    if text.problems:
        return "unsafe_text", "the claim was changed before publication: " + "; ".join(text.problems), None
    if not (draft.quote and draft.quote.strip()):
        return "no_quote", "a [SOURCED] claim must quote its passage", None
    if (problem := quote_problem(draft.quote)) is not None:
        return "unsafe_text", problem, None
    if failed is not None or passage is None:
        return failed, detail, None
    if not verbatim.get((passage.chunk_id, draft.quote), False):
        return "quote_not_verbatim", f"the quote is not found verbatim (whole words) in {draft.source_label}", None
    if basis is not None:
        if _said(draft.text) in basis.downgraded:
            return "not_in_findings", "the audit downgraded this claim in its round; the synthesis cannot restore it", None
        if (passage.chunk_id, draft.quote) not in basis.citations:
            return ("not_in_findings",
                    "the synthesis may cite only a finding that survived the audit, with that finding's own quote", None)
        if (passage.chunk_id, draft.quote, _spaced(draft.text)) in basis.findings:
            return None, "", verdicts.get((draft.text, passage.chunk_id, draft.quote), "abstain")  # audited in its round
    grounding = ground(draft.text, draft.quote, passage.text)
    if grounding.failed is not None:
        return grounding.failed, grounding.detail, None  # type: ignore[return-value]
    verdict = verdicts.get((draft.text, passage.chunk_id, draft.quote), "abstain")
    if verdict in _REJECTING_VERDICTS:
        return verdict, (f"the support verifier reads {draft.source_label} as "  # type: ignore[return-value]
                         f"{'contradicting' if verdict == 'contradicts' else 'only context for'} the claim"), verdict
    if verdict == "abstain" and not grounding.decided:
        return "not_verifiable", ("the support verifier abstained and too little of the claim aligns to its sentence "
                                  "for the rules to vouch for it"), verdict
    return None, "", verdict


def audit_reply(role: str, attempt: int, reply: DraftReply, evidence: RoundEvidence,
                verbatim: Mapping[tuple[int, str], bool],
                verdicts: Mapping[tuple[str, int, str], Verdict], basis: SynthesisBasis | None = None) -> AuditedDraft:
    """`basis`: for the synthesis, what it may cite (None for a persona's round)."""
    claims: list[AuditedClaim] = []
    downgrades: list[Downgrade] = []
    failures: list[str] = []
    for draft in reply.claims:
        text = clean_claim(draft.text).text
        if draft.source_label is not None and (len(draft.source_label) > 64 or unsafe_characters(draft.source_label)):
            draft = replace(draft, source_label=None)  # a label is S<n> or chunk:<id>; anything else names nothing
        if draft.tag != SOURCED:
            claims.append(AuditedClaim(text=text, claimed_tag=INFERRED, tag=INFERRED))
            continue
        passage, failed, detail = evidence.resolve(draft.source_label)
        failed, detail, verdict = _check(draft, passage, failed, detail, verbatim, verdicts, basis)
        chunk_id = passage.chunk_id if passage is not None else None
        # what is stored of a refused quote is safe to store: unsafe characters out, bounded
        quote = draft.quote if failed != "unsafe_text" or draft.quote is None else \
            clean_claim(draft.quote[:MAX_QUOTE_CHARS]).text
        claims.append(AuditedClaim(text=text, claimed_tag=SOURCED, tag=SOURCED if failed is None else INFERRED,
                                   chunk_id=chunk_id, source_label=draft.source_label, quote=quote,
                                   verdict=verdict, failed=failed, detail=detail))
        if failed is not None:
            downgrades.append(Downgrade(role=role, attempt=attempt, claim=text, chunk_id=chunk_id,
                                        source_label=draft.source_label, quote=quote, failed=failed, detail=detail))
            if failed in CITATION_CHECKS:
                failures.append(f"{draft.source_label or 'a claim'}: {detail} (claim: {text[:120]!r})")
    if not reply.malformed and not reply.insufficient and not reply.claims:
        failures.append("the answer has no claims and does not say the evidence is insufficient")
    return AuditedDraft(role=role, attempt=attempt, claims=claims, downgrades=downgrades, call=reply.call,
                        insufficient=clean_note(reply.insufficient), malformed=clean_note(reply.malformed),
                        failures=failures)


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


def summarize(sections: Sequence[Section], synthesis: Section, drafts: Sequence[AuditedDraft],
              self_verified: bool = False) -> AuditSummary:
    """DEL-7 over the published brief (persona sections and synthesis); downgrades (by reason) and
    retries over every attempt."""
    published = [c for s in (*sections, synthesis) if not s.insufficient for c in s.claims]
    return AuditSummary(
        sourced_verified=sum(c.tag == SOURCED for c in published),
        inferred=sum(c.tag == INFERRED for c in published),
        downgraded=sum(len(d.downgrades) for d in drafts),
        retried=sum(d.attempt == 2 for d in drafts),
        insufficient_sections=sum(bool(s.insufficient) for s in sections),
        sourced_claimed=sum(d.sourced_claimed for d in drafts),
        reasons=dict(sorted(Counter(g.failed for d in drafts for g in d.downgrades).items())),
        self_verified=self_verified,
    )
