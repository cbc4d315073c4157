"""What a deliberation is made of (DEL-1…8, AUD-1…4): the panel's plan, the passages a persona
reads, the claims it writes, the audit's verdict on each, and the brief that is persisted.

Tags are the two the product knows: `SOURCED` (the claim cites a retrieved passage with a verbatim
quote) and `INFERRED` (analytical reasoning, said plainly). A `SOURCED` claim keeps its tag only if
the audit finds its passage in the round's retrieved set, its quote verbatim in that passage and no
verdict that the passage fails to support it; otherwise it is rewritten to `INFERRED` and the
failed check is recorded (`Downgrade`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from forum_atlas.calls import CallRecord, Verdict

Tag = Literal["SOURCED", "INFERRED"]
SOURCED: Tag = "SOURCED"
INFERRED: Tag = "INFERRED"

# Why a SOURCED claim lost its tag; the first failing check in this order is the one recorded
# (atlas.deliberation.untrusted, then the citation, then atlas.deliberation.grounding, then the verifier).
FailedCheck = Literal["unsafe_text", "no_quote", "unknown_source", "not_retrieved", "quote_not_verbatim",
                      "not_in_findings", "quote_uninformative", "claim_not_covered", "direction_clash",
                      "negation_clash", "contradicts", "contextual",
                      # issue 35: a faithful restatement (atlas.deliberation.faithful)
                      "order_changed", "clauses_spliced", "number_rebound", "unit_changed", "comparison_reversed",
                      "frame_dropped", "modality_dropped", "quantifier_changed", "polarity_clash", "not_verifiable"]

COORDINATOR = "coordinator"
SPECIALISTS = ("legal_regulatory", "financial", "technical", "geospatial", "forecasting")
ROLE_TITLES = {
    COORDINATOR: "Coordinator",
    "legal_regulatory": "Legal / regulatory",
    "financial": "Financial",
    "technical": "Technical",
    "geospatial": "Geospatial",
    "forecasting": "Forecasting",
}


def insufficient_evidence(topic: str) -> str:
    """The sentence a failed or empty section renders instead of text (DEL-5)."""
    return f"insufficient evidence on {topic}"


@dataclass(frozen=True)
class Redaction:
    """One piece of personal data removed from the question before any provider saw it. The value
    itself is never kept: only its kind, where it stood and a digest to match it against."""
    kind: Literal["email", "phone", "id_number"]
    start: int
    end: int
    digest: str      # sha256 hex of the removed text
    placeholder: str  # what replaced it, e.g. "[EMAIL]"


@dataclass(frozen=True)
class PersonaAssignment:
    role: str           # one of SPECIALISTS
    topic: str          # what its section is about (also the topic of "insufficient evidence on …")
    focus_query: str    # its retrieval query (built from the de-identified question)
    reason: str         # why the coordinator called it


@dataclass(frozen=True)
class Plan:
    outbound_question: str                     # de-identified: the only form any provider sees
    redactions: tuple[Redaction, ...]
    personas: tuple[PersonaAssignment, ...]
    planner: str                               # engine name and version of the coordinator's rule

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Passage:
    """A retrieved source as a persona reads it. `label` (S1, S2, …) is how prompts cite it."""
    label: str
    chunk_id: int
    document_id: int
    document_version: int
    title: str
    text: str           # the context given to the persona (the chunk, capped to the context budget)
    source_name: str
    importance: int = 3               # the source's, 1–5 (5 = canonical)
    quality_score: int = 3            # the source's, 1–5
    url: str | None = None
    published_at: str | None = None   # ISO date-time, or None when undated
    first_page: int | None = None     # pages of a passage from a paged file (PDF)
    last_page: int | None = None
    section: str | None = None
    file: str | None = None           # the file the document was read from, and the reader that read it
    reader: str | None = None
    also_in: tuple[str, ...] = ()     # the other sources holding identical content, e.g. "Library (paper.pdf)"


@dataclass(frozen=True)
class ClaimDraft:
    """A claim as an engine wrote it, before the audit."""
    text: str
    tag: Tag
    source_label: str | None = None   # the passage it cites, e.g. "S3"
    quote: str | None = None          # the verbatim passage text it rests on


@dataclass(frozen=True)
class DraftRequest:
    question: str                     # de-identified
    persona: PersonaAssignment
    passages: tuple[Passage, ...]
    attempt: int = 1                  # 2 = the retry, with a stricter prompt
    failures: tuple[str, ...] = ()    # on a retry: what failed validation the first time, in words


# Outcomes that say the provider could not be reached or would not serve us after its retries:
# nothing about the sources, so never an "insufficient evidence" (a bad_response is the model's answer).
UNREACHABLE = frozenset({"timeout", "rate_limited", "auth", "unavailable"})


class ProviderUnreachable(RuntimeError):
    """The engine or the verifier could not be reached after its retries: the deliberation stops
    with this typed outcome and seals nothing; the failed call is logged as an audit event."""

    def __init__(self, call: CallRecord):
        super().__init__(f"{call.stage}: {call.provider} could not be reached ({call.outcome} after {call.attempts} "
                         f"attempt{'s' if call.attempts != 1 else ''}){': ' + call.detail if call.detail else ''}; "
                         "no brief was sealed")
        self.call = call

    @property
    def outcome(self) -> str:
        return self.call.outcome

    def __reduce__(self) -> tuple:
        return (type(self), (self.call,))


@dataclass
class DraftReply:
    """An engine's answer for one persona. `malformed` says why the output failed structural
    validation (then `claims` is empty); `insufficient` is the engine's own, honest "nothing in
    these passages addresses the topic"."""
    claims: list[ClaimDraft]
    call: CallRecord
    insufficient: str | None = None
    malformed: str | None = None


@dataclass(frozen=True)
class AuditedClaim:
    text: str
    claimed_tag: Tag                  # what the engine said
    tag: Tag                          # what the audit allows
    chunk_id: int | None = None       # the cited passage (None for INFERRED claims without a source)
    source_label: str | None = None
    quote: str | None = None
    verdict: Verdict | None = None    # the support verifier's, for SOURCED claims it reached
    failed: FailedCheck | None = None
    detail: str = ""                  # the failed check in words

    @property
    def downgraded(self) -> bool:
        return self.claimed_tag == SOURCED and self.tag == INFERRED

    @property
    def verified(self) -> bool:
        return self.tag == SOURCED


@dataclass(frozen=True)
class Downgrade:
    """A SOURCED_TAGS_DOWNGRADED event: which claim, which passage, which check failed."""
    role: str
    attempt: int
    claim: str
    chunk_id: int | None
    source_label: str | None
    quote: str | None
    failed: FailedCheck
    detail: str


@dataclass
class Section:
    """One persona's paragraph after the audit (and the retry, where validation failed)."""
    role: str
    topic: str
    claims: list[AuditedClaim] = field(default_factory=list)
    insufficient: str | None = None   # why the section renders "insufficient evidence on <topic>"
    attempts: int = 1
    engine: str = ""

    @property
    def text_if_insufficient(self) -> str:
        return insufficient_evidence(self.topic)

    def synthesis_input(self) -> list[AuditedClaim]:
        """What synthesis may see (DEL-6): verified SOURCED claims and the engine's own INFERRED
        ones, never a downgraded claim."""
        if self.insufficient:
            return []
        return [c for c in self.claims if not c.downgraded]


@dataclass(frozen=True)
class AuditSummary:
    """DEL-7: verified SOURCED vs INFERRED in the published brief, downgrades, retries."""
    sourced_verified: int
    inferred: int
    downgraded: int
    retried: int
    insufficient_sections: int
    sourced_claimed: int              # SOURCED tags as the engines wrote them, every attempt
    reasons: dict[str, int] = field(default_factory=dict)   # downgrades by FailedCheck, every attempt
    self_verified: bool = False       # the support verifier was the model that drafted the claims

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def measures(self) -> list[tuple[str, int]]:
        """The summary as (measure, count) rows, each downgrade reason on its own row."""
        counts = {k: v for k, v in asdict(self).items() if isinstance(v, int) and not isinstance(v, bool)}
        return [*counts.items(), *((f"downgraded: {reason}", n) for reason, n in sorted(self.reasons.items()))]


@dataclass(frozen=True)
class Finding:
    """A post-audit claim as synthesis receives it."""
    role: str
    claim: AuditedClaim


@dataclass(frozen=True)
class SynthesisRequest:
    question: str                               # de-identified
    findings: tuple[Finding, ...]               # Section.synthesis_input() of every section
    passages: tuple[Passage, ...]               # the passages those findings cite
    insufficient_topics: tuple[str, ...] = ()   # sections that render "insufficient evidence on …"


@dataclass
class BriefRecord:
    """Everything one deliberation computed, handed to the store to write in one transaction."""
    question: str                     # the de-identified question (the raw one is never stored)
    plan: Plan
    sections: list[Section]           # post-audit, one per persona
    synthesis: Section                # the coordinator's, audited like the others
    audit: AuditSummary
    downgrades: list[Downgrade]       # each becomes a SOURCED_TAGS_DOWNGRADED event
    calls: list[CallRecord]           # each becomes a provider-call row
    passages: dict[int, Passage]      # the round's retrieved set, by chunk id
    snapshot: dict[str, Any]          # the evidence snapshot (JSON-native values only), sealed on write
    engines: dict[str, str]           # role of the engine -> "name version"
    extractive: bool                  # the claims were copied from passages, not written by a model
    created_at: datetime
    flow_run_id: str | None = None


# --- what a stored brief looks like when read back (store.briefs.load_brief → render) ---------

@dataclass(frozen=True)
class CitationView:
    citation_id: int
    label: str                        # S1, S2, … as the personas cited it
    chunk_id: int
    document_id: int
    document_version: int
    title: str
    source_name: str
    url: str | None
    quote: str
    passage: str                      # the whole cited chunk, to reopen the passage behind the citation
    importance: int                   # snapshotted at citation time (AUD-2)
    quality_score: int
    recency_label: str                # just_now | hours | days | weeks | months | older | undated
    published_at: str | None
    first_page: int | None = None     # where the passage is in its file (a PDF's pages), to reopen it there
    last_page: int | None = None
    section: str | None = None
    file: str | None = None
    also_in: tuple[str, ...] = ()     # the other sources that held the passage's identical content (snapshot)


@dataclass(frozen=True)
class ClaimView:
    text: str
    tag: Tag
    claimed_tag: Tag
    verdict: Verdict | None = None
    failed: FailedCheck | None = None
    detail: str = ""
    citation: CitationView | None = None


@dataclass(frozen=True)
class SectionView:
    role: str
    topic: str
    claims: tuple[ClaimView, ...]
    insufficient: str | None = None
    attempts: int = 1


@dataclass(frozen=True)
class WithheldView:
    """A source the brief's retrieval would have matched but may not cite, and why: the evidence
    router's retraction gate excluded it, or its licence guard kept it as context only."""
    record_key: str                   # doi:… | pmid:… | <source>:<id>
    title: str
    source: str                       # the evidence source that returned it
    status: Literal["excluded", "context_only"]
    reason: str


@dataclass(frozen=True)
class BriefView:
    brief_id: int
    question: str
    created_at: str                   # ISO date-time
    synthesis: SectionView
    sections: tuple[SectionView, ...]
    audit: AuditSummary
    engines: dict[str, str]
    extractive: bool
    snapshot_id: int
    seal: str
    redactions: int                   # how many pieces of personal data were removed from the question
    flow_run_id: str | None = None
    withheld: tuple[WithheldView, ...] = ()
    evidence_run_id: int | None = None        # the evidence-gathering run that preceded the brief (--gather)
    gathered: tuple[str, ...] = ()            # that run's per-source outcomes, e.g. "pubmed ok(3)"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """What a run returns of its brief: ids, seal and the audit counts."""
        return {"brief_id": self.brief_id, "snapshot_id": self.snapshot_id, "seal": self.seal, **self.audit.as_dict()}
