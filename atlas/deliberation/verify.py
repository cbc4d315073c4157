"""Verifying a stored brief (AUD-1…4): what is wrong with it, in words, from its rows as the store read them.

`forum_atlas.store.briefs.stored_brief` reads a brief's rows, its snapshot, its audit events and the events
around them; `verify_report` compares them: the snapshot's canonical text against its stored seal and the seal
recorded in the BRIEF_PERSISTED event (naming the snapshot parts that changed), the brief's rows against the
digests in that event, every citation's quote against its chunk under the verbatim rule that sealed the brief,
and the hash chain around the brief's events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forum_atlas.deliberation.quotes import SUBSTRING_V1, VERBATIM_RULE, WHOLE_WORDS_V2, quote_in_passage
from forum_atlas.integrity import GENESIS, Event, brief_row_digests, chain_findings, changed_parts, seal

BRIEF_PERSISTED = "BRIEF_PERSISTED"


@dataclass(frozen=True)
class StoredBrief:
    """A brief as stored, for verifying: its row, snapshot row, BRIEF_PERSISTED/SOURCED_TAGS_DOWNGRADED events,
    citations (each with its chunk's body and the database's verbatim checks, old and current rule), the
    audit events around its own, and its rows shaped as when they were persisted (for their digests)."""
    brief_id: int
    brief: dict[str, Any]
    snapshot: dict[str, Any]
    events: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    around: list[Event]
    brief_row: list
    section_rows: list[tuple]
    claim_rows: list[tuple]
    call_rows: list[tuple]


@dataclass(frozen=True)
class BriefVerification:
    problems: list[str]      # what is wrong, in words; empty when the brief is intact
    rule: str                # the verbatim rule that sealed the brief (substring-v1 before sql/080)
    notes: list[str]         # what a reader should know that is not a fault (e.g. the current rule's view)
    grounding: str = ""      # the support rule set that audited it (grounding-v1, grounding-v2; "" before issue 22)


def sealing_rule(engines: dict[str, Any]) -> str:
    """The verbatim rule a brief was sealed under, from its sealed engines (none recorded: substring-v1)."""
    audit_rules = str(engines.get("audit", ""))
    return WHOLE_WORDS_V2 if audit_rules.split(" ")[0] == WHOLE_WORDS_V2 else SUBSTRING_V1


def sealing_grounding(engines: dict[str, Any]) -> str:
    """The support rule set a brief was audited under, from its sealed engines ("" when none is recorded).
    Only the verbatim rule is re-checked: a claim's tag was decided when the brief was sealed."""
    return next((part for part in str(engines.get("audit", "")).split(" ") if part.startswith("grounding-")), "")


def verify_brief(stored: StoredBrief) -> list[str]:
    """What is wrong with a stored brief, in words; empty when it is intact."""
    return verify_report(stored).problems


def verify_report(stored: StoredBrief) -> BriefVerification:
    """Checks: the snapshot's canonical text against its stored seal and against the seal recorded
    in the BRIEF_PERSISTED event (naming the snapshot parts that changed); the brief's rows
    against the digests in that event; every citation's quote against its chunk with the verbatim
    rule that sealed the brief, in the database and again in Python (a brief sealed under an older
    rule is also read under the current one, as a note); the audit chain around this brief's events."""
    brief_id, brief, snapshot, events, citations, around = (
        stored.brief_id, stored.brief, stored.snapshot, stored.events, stored.citations, stored.around)
    ids = [e["event_id"] for e in events]
    watched = set(ids) | {later.event_id for earlier, later in zip(around, around[1:]) if earlier.event_id in ids}
    chain = [f.as_link() for i, e in enumerate(around) if e.event_id in watched
             for f in chain_findings([e], around[i - 1].row_hash if i else GENESIS)]

    problems: list[str] = []
    persisted = [e for e in events if e["kind"] == BRIEF_PERSISTED]
    event = persisted[0] if len(persisted) == 1 else None
    if not persisted:
        problems.append(f"brief {brief_id}: no {BRIEF_PERSISTED} event in the audit log")
    elif len(persisted) > 1:
        problems.append(f"brief {brief_id}: {len(persisted)} {BRIEF_PERSISTED} events in the audit log, not one")
    recorded = event["payload"] if event else {}

    # The snapshot and its seal.
    sid = brief["snapshot_id"]
    canonical = snapshot["canonical"]
    recomputed = seal(canonical)
    if recomputed != snapshot["seal"]:
        problems.append(f"evidence snapshot {sid}: its canonical text no longer matches its stored seal")
    if event is not None:
        if recorded.get("snapshot_id") != sid:
            problems.append(f"brief {brief_id}: points at snapshot {sid}, the audit log (event {event['event_id']}) "
                            f"at snapshot {recorded.get('snapshot_id')}")
        if recorded.get("seal") != recomputed:
            problems.append(f"evidence snapshot {sid}: its canonical text no longer matches the seal recorded in the "
                            f"audit log (event {event['event_id']})")
        if recorded.get("seal") != snapshot["seal"]:
            problems.append(f"evidence snapshot {sid}: its stored seal differs from the seal recorded in the audit log "
                            f"(event {event['event_id']})")
        if recorded.get("part_digests") != snapshot["part_digests"]:
            problems.append(f"evidence snapshot {sid}: its part digests differ from those recorded in the audit log")
    reference = recorded.get("part_digests") or snapshot["part_digests"] or {}
    if recomputed != recorded.get("seal", snapshot["seal"]) or recomputed != snapshot["seal"]:
        for part, what in changed_parts(canonical, reference):
            problems.append(f"evidence snapshot {sid}: part {part!r}: {what}")

    # The brief's rows against the digests the audit log holds.
    if event is not None:
        cited = [(c["section_ordinal"], c["ordinal"], c["chunk_id"], c["quote"]) for c in citations]
        actual = brief_row_digests(stored.brief_row, stored.section_rows, stored.claim_rows, cited, stored.call_rows)
        for group, digest in (recorded.get("row_digests") or {}).items():
            if actual.get(group) != digest:
                problems.append(f"brief {brief_id}: its {group.replace('_', ' ')} no longer match what was persisted "
                                f"(digest in event {event['event_id']})")
        if not recorded.get("row_digests"):
            problems.append(f"brief {brief_id}: the audit log holds no row digests for it")

    # Every citation still reopens to a passage that holds its quote, under the rule that sealed it.
    rule = sealing_rule(brief["engines"] or {})  # the brief row's engines: its digest is in the audit log
    notes: list[str] = []
    for c in citations:
        sealed_ok = c["verbatim"] if rule == WHOLE_WORDS_V2 else c["verbatim_v1"]
        if c["body"] is None:
            problems.append(f"citation {c['citation_id']}: its chunk {c['chunk_id']} is gone")
        elif not sealed_ok or not quote_in_passage(c["quote"], c["body"], rule):
            problems.append(f"citation {c['citation_id']}: its quote no longer occurs verbatim in chunk "
                            f"{c['chunk_id']} ({rule})")
        elif rule != VERBATIM_RULE and not c["verbatim"]:
            notes.append(f"citation {c['citation_id']}: its quote matches chunk {c['chunk_id']} only inside a word; "
                         f"the current rule ({VERBATIM_RULE}) would not let it through")

    # The hash chain around this brief's events.
    for row in chain:
        problems.append(f"audit log event {row['event_id']}: {row['problem']}")
    return BriefVerification(problems, rule, notes, sealing_grounding(brief["engines"] or {}))
