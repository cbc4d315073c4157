"""Repository for briefs (AUD-1…4, DEL-3): the verbatim check, persisting a brief in one
transaction, reading it back, listing briefs, and reading what `forum_atlas.deliberation.verify`
checks to tell whether a stored brief is intact.

`persist_brief` prepares every row, the canonical snapshot text, its seal and digests in Python
first, then opens one short transaction that only writes: the sealed snapshot, the brief, its
sections and claims, a citation per verified SOURCED claim (the database snapshots the source's
importance/quality and the recency label, and refuses a quote that is not verbatim), the provider
calls, one SOURCED_TAGS_DOWNGRADED event per downgrade and one BRIEF_PERSISTED event. That last
event carries the seal, the snapshot's part digests and digests of the brief's rows, so the
hash-chained audit log holds what `forum_atlas.deliberation.verify` compares the stored rows against.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.model import (
    AuditSummary,
    BriefRecord,
    BriefView,
    CitationView,
    ClaimView,
    Section,
    SectionView,
    WithheldView,
)
from forum_atlas.deliberation.verify import BRIEF_PERSISTED, StoredBrief
from forum_atlas.integrity import brief_row_digests, canonical_json, part_digests, seal
from forum_atlas.store.db import Database, DatabaseError, read_events, record_event
from forum_atlas.store.retrieval import passage_place

SOURCED_TAGS_DOWNGRADED = "SOURCED_TAGS_DOWNGRADED"
PROVIDER_UNREACHABLE = "PROVIDER_UNREACHABLE"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class BriefNotFound(LookupError):
    """No brief with that id."""

    def __init__(self, brief_id: int):
        super().__init__(f"no brief with id {brief_id}; `atlas brief list` shows the stored briefs")
        self.brief_id = brief_id


class BriefRefused(DatabaseError):
    """The database refused the brief (e.g. a citation whose quote is not verbatim); nothing was written."""


@dataclass(frozen=True)
class PersistedBrief:
    brief_id: int
    snapshot_id: int
    seal: str


# ---------------------------------------------------------------- the verbatim check (DEL-3)


def verbatim_matches(conn: psycopg.Connection, pairs: Sequence[tuple[int, str]]) -> list[bool]:
    """forum.citation_verbatim_matches for every (chunk_id, quote) pair, in order, in one query."""
    if not pairs:
        return []
    rows = conn.cursor(row_factory=dict_row).execute(
        """SELECT forum.citation_verbatim_matches(p.chunk_id, p.quote) AS ok
             FROM unnest(%s::bigint[], %s::text[]) WITH ORDINALITY AS p(chunk_id, quote, n)
            ORDER BY p.n""",
        ([chunk_id for chunk_id, _ in pairs], [quote for _, quote in pairs]),
    ).fetchall()
    return [row["ok"] for row in rows]


# ---------------------------------------------------------------- rows, as written and as read back
# The same row shapes are built from a BriefRecord before writing and from the database when
# verifying; their digests go into the BRIEF_PERSISTED event.

_SECTION_COLUMNS = ("ordinal", "kind", "role", "topic", "insufficient", "attempts", "engine")
_CLAIM_COLUMNS = ("section_ordinal", "ordinal", "text", "claimed_tag", "tag", "chunk_id", "source_label", "quote",
                  "verdict", "failed", "detail")
_CALL_COLUMNS = ("ordinal", "stage", "provider", "version", "input_digest", "outcome", "latency_ms", "attempts",
                 "detail", "prompt_hash", "flow_run_id", "task_run_id")


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _aware(moment: datetime) -> datetime:
    """A naive created_at is taken as UTC (never as the database session's time zone)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _section_rows(record: BriefRecord) -> list[tuple]:
    def row(ordinal: int, kind: str, section: Section) -> tuple:
        return (ordinal, kind, section.role, section.topic, section.insufficient, int(section.attempts), section.engine)

    rows = [row(i, "persona", s) for i, s in enumerate(record.sections)]
    rows.append(row(len(record.sections), "synthesis", record.synthesis))
    return rows


def _claim_rows(record: BriefRecord) -> list[tuple]:
    sections = [*record.sections, record.synthesis]
    return [(s_ord, c_ord, c.text, c.claimed_tag, c.tag, c.chunk_id, c.source_label, c.quote, c.verdict, c.failed,
             c.detail or "")
            for s_ord, section in enumerate(sections) for c_ord, c in enumerate(section.claims)]


def _call_rows(record: BriefRecord) -> list[tuple]:
    return [(i, c.stage, c.provider, c.version, c.input_digest, c.outcome, float(c.latency_ms), int(c.attempts),
             c.detail or "", c.prompt_hash, c.flow_run_id, c.task_run_id) for i, c in enumerate(record.calls)]


def _cited(claims: list[tuple]) -> list[tuple]:
    """(section_ordinal, ordinal, chunk_id, quote) of the claims that get a citation."""
    return [(c[0], c[1], c[5], c[7]) for c in claims if c[4] == "SOURCED"]


def _brief_row(question: str, created_at: datetime, extractive: bool, redactions: int, flow_run_id: str | None,
               audit: Any, engines: Any, plan: Any) -> list:
    return [question, _micros(created_at), bool(extractive), int(redactions), flow_run_id, audit, engines, plan]


# ---------------------------------------------------------------- persisting


@dataclass(frozen=True)
class _Prepared:
    canonical: str
    seal: str
    parts: dict[str, str]
    brief: dict[str, Any]
    sections: list[tuple]
    claims: list[tuple]
    calls: list[tuple]
    digests: dict[str, str]
    counts: dict[str, int]


def _prepare(record: BriefRecord) -> _Prepared:
    if not isinstance(record.snapshot, dict):
        raise TypeError(f"the evidence snapshot is a dict of JSON-native values, not a {type(record.snapshot).__name__}")
    canonical = canonical_json(record.snapshot)
    created_at = _aware(record.created_at)
    # jsonb columns hold these; canonical_json refuses anything that would not come back the same.
    audit = json.loads(canonical_json(record.audit.as_dict()))
    engines = json.loads(canonical_json(dict(record.engines)))
    plan = json.loads(canonical_json(record.plan.as_dict()))
    brief = {"question": record.question, "created_at": created_at, "audit": audit, "engines": engines,
             "extractive": bool(record.extractive), "redactions": len(record.plan.redactions),
             "flow_run_id": record.flow_run_id, "plan": plan}
    sections, claims, calls = _section_rows(record), _claim_rows(record), _call_rows(record)
    digests = brief_row_digests(
        _brief_row(record.question, created_at, record.extractive, brief["redactions"], record.flow_run_id,
                   audit, engines, plan),
        sections, claims, _cited(claims), calls)
    counts = {"sections": len(sections), "claims": len(claims), "citations": len(_cited(claims)),
              "provider_calls": len(calls), "downgrades": len(record.downgrades)}
    return _Prepared(canonical, seal(canonical), part_digests(record.snapshot), brief, sections, claims, calls,
                     digests, counts)


def _columns(rows: list[tuple], width: int) -> list[list]:
    return [[row[i] for row in rows] for i in range(width)]


def persist_brief(db: Database, record: BriefRecord) -> PersistedBrief:
    """Write the brief in one transaction (everything or nothing). Raises BriefRefused when the
    database refuses a row (a non-verbatim quote, an unknown chunk, a broken invariant)."""
    p = _prepare(record)
    downgrades = [{"role": d.role, "attempt": d.attempt, "claim": d.claim, "chunk_id": d.chunk_id,
                   "source_label": d.source_label, "quote": d.quote, "failed": d.failed, "detail": d.detail}
                  for d in record.downgrades]
    try:
        with db.transaction() as conn:
            cur = conn.cursor(row_factory=dict_row)
            snapshot_id = cur.execute(
                """INSERT INTO forum.evidence_snapshots (canonical, seal, part_digests)
                   VALUES (%s, %s, %s::jsonb) RETURNING snapshot_id""",
                (p.canonical, p.seal, json.dumps(p.parts)),
            ).fetchone()["snapshot_id"]
            b = p.brief
            brief_id = cur.execute(
                """INSERT INTO forum.briefs (question, created_at, snapshot_id, audit, engines, extractive, redactions,
                                             flow_run_id, plan)
                   VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s::jsonb) RETURNING brief_id""",
                (b["question"], b["created_at"], snapshot_id, json.dumps(b["audit"]), json.dumps(b["engines"]),
                 b["extractive"], b["redactions"], b["flow_run_id"], json.dumps(b["plan"])),
            ).fetchone()["brief_id"]
            cur.execute(
                f"""INSERT INTO forum.brief_sections (brief_id, {", ".join(_SECTION_COLUMNS)})
                    SELECT %s, s.* FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::text[], %s::int[],
                                              %s::text[]) AS s""",
                (brief_id, *_columns(p.sections, len(_SECTION_COLUMNS))),
            )
            claim_ids: dict[tuple[int, int], int] = {}
            if p.claims:
                for row in cur.execute(
                    f"""INSERT INTO forum.brief_claims (brief_id, {", ".join(_CLAIM_COLUMNS)})
                        SELECT %s, c.* FROM unnest(%s::int[], %s::int[], %s::text[], %s::text[], %s::text[],
                                                  %s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[],
                                                  %s::text[]) AS c
                        RETURNING claim_id, section_ordinal, ordinal""",
                    (brief_id, *_columns(p.claims, len(_CLAIM_COLUMNS))),
                ).fetchall():
                    claim_ids[(row["section_ordinal"], row["ordinal"])] = row["claim_id"]
            cited = _cited(p.claims)
            if cited:
                cur.execute(
                    """INSERT INTO forum.citations (claim_id, chunk_id, quote)
                       SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[])""",
                    ([claim_ids[(c[0], c[1])] for c in cited], [c[2] for c in cited], [c[3] for c in cited]),
                )
            if p.calls:
                cur.execute(
                    f"""INSERT INTO forum.provider_calls (brief_id, {", ".join(_CALL_COLUMNS)})
                        SELECT %s, c.* FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::text[],
                                                  %s::text[], %s::float8[], %s::int[], %s::text[], %s::text[],
                                                  %s::text[], %s::text[]) AS c""",
                    (brief_id, *_columns(p.calls, len(_CALL_COLUMNS))),
                )
            for payload in downgrades:
                record_event(conn, SOURCED_TAGS_DOWNGRADED, {"brief_id": brief_id, **payload}, run_id=record.flow_run_id)
            record_event(conn, BRIEF_PERSISTED, {
                "brief_id": brief_id, "snapshot_id": snapshot_id, "seal": p.seal, "part_digests": p.parts,
                "row_digests": p.digests, "counts": p.counts,
            }, run_id=record.flow_run_id)
    except (psycopg.errors.IntegrityError, psycopg.errors.RaiseException) as exc:
        raise BriefRefused(f"the database refused the brief, nothing was written: {exc.diag.message_primary or exc}") from exc
    return PersistedBrief(brief_id=brief_id, snapshot_id=snapshot_id, seal=p.seal)


def record_unreachable(db: Database, question: str, call: CallRecord) -> int:
    """The provider-call log of a deliberation that stopped because a provider could not be reached:
    one audit event naming the call tried (stage, provider, outcome, attempts, detail) and the
    de-identified question; no brief, no row anywhere else."""
    with db.transaction() as conn:
        return record_event(conn, PROVIDER_UNREACHABLE, {"question": question, "outcome": call.outcome,
                                                         "call": call.as_dict(), "sealed": False},
                            run_id=call.flow_run_id)


# ---------------------------------------------------------------- reading back


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def load_brief(db: Database, brief_id: int) -> BriefView:
    """The stored brief as the renderer reads it; every citation carries its whole chunk."""
    with db.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        brief = cur.execute(
            """SELECT b.*, s.seal, s.canonical::jsonb -> 'withheld' AS withheld,
                      s.canonical::jsonb -> 'evidence_gathering' AS gathering,
                      s.canonical::jsonb -> 'passages' AS passages
                 FROM forum.briefs b JOIN forum.evidence_snapshots s USING (snapshot_id)
                WHERE b.brief_id = %s""", (brief_id,)).fetchone()
        if brief is None:
            raise BriefNotFound(brief_id)
        sections = cur.execute(
            "SELECT * FROM forum.brief_sections WHERE brief_id = %s ORDER BY ordinal", (brief_id,)).fetchall()
        claims = cur.execute(
            f"""SELECT c.*, t.citation_id, t.document_id, t.document_version, t.importance, t.quality_score,
                      t.recency_label, t.published_at, t.quote AS cited_quote, ch.body AS passage, d.title,
                      coalesce(d.url, src.url) AS url, src.name AS source_name,
                      {passage_place(chunk="ch")}
                 FROM forum.brief_claims c
                 LEFT JOIN forum.citations t ON t.claim_id = c.claim_id
                 LEFT JOIN forum.chunks ch ON ch.chunk_id = t.chunk_id
                 LEFT JOIN forum.documents d ON d.document_id = t.document_id
                 LEFT JOIN forum.sources src ON src.source_id = t.source_id
                WHERE c.brief_id = %s ORDER BY c.section_ordinal, c.ordinal""", (brief_id,)).fetchall()
    copies = _copies(brief["passages"])
    by_section: dict[int, list[ClaimView]] = {}
    for c in claims:
        citation = None
        if c["citation_id"] is not None:
            citation = CitationView(
                citation_id=c["citation_id"], label=c["source_label"] or "", chunk_id=c["chunk_id"],
                document_id=c["document_id"], document_version=c["document_version"], title=c["title"],
                source_name=c["source_name"], url=c["url"], quote=c["cited_quote"], passage=c["passage"],
                importance=c["importance"], quality_score=c["quality_score"], recency_label=c["recency_label"],
                published_at=_iso(c["published_at"]), first_page=c["first_page"], last_page=c["last_page"],
                section=c["section"], file=c["file"], also_in=copies.get(c["chunk_id"], ()))
        by_section.setdefault(c["section_ordinal"], []).append(ClaimView(
            text=c["text"], tag=c["tag"], claimed_tag=c["claimed_tag"], verdict=c["verdict"], failed=c["failed"],
            detail=c["detail"], citation=citation))
    views = {s["ordinal"]: SectionView(role=s["role"], topic=s["topic"], claims=tuple(by_section.get(s["ordinal"], ())),
                                       insufficient=s["insufficient"], attempts=s["attempts"]) for s in sections}
    synthesis = next((views[s["ordinal"]] for s in sections if s["kind"] == "synthesis"), None)
    if synthesis is None:  # cannot happen for a brief persist_brief wrote
        raise DatabaseError(f"brief {brief_id} has no synthesis section")
    return BriefView(
        brief_id=brief["brief_id"], question=brief["question"], created_at=_iso(brief["created_at"]),
        synthesis=synthesis,
        sections=tuple(views[s["ordinal"]] for s in sections if s["kind"] == "persona"),
        audit=AuditSummary(**brief["audit"]), engines=dict(brief["engines"]), extractive=brief["extractive"],
        snapshot_id=brief["snapshot_id"], seal=brief["seal"], redactions=brief["redactions"],
        flow_run_id=brief["flow_run_id"], **_evidence_base(brief["withheld"], brief["gathering"]))


def _copies(passages: dict | list | None) -> dict[int, tuple[str, ...]]:
    """Chunk id -> where else its passage's identical content was, as the snapshot sealed it (a brief
    sealed before issue 36 does not say)."""
    entries = passages.values() if isinstance(passages, dict) else passages or ()
    return {p["chunk_id"]: tuple(p.get("also_in") or ()) for p in entries if isinstance(p, dict) and "chunk_id" in p}


def _evidence_base(withheld: list[dict] | None, gathering: dict | None) -> dict[str, Any]:
    """The snapshot's withheld sources and gather run as BriefView fields (briefs sealed before
    issue 14 have neither part)."""
    ran = bool(gathering and gathering.get("ran"))
    return {"withheld": tuple(WithheldView(w["record_key"], w["title"], w["source"], w["status"], w["reason"])
                              for w in withheld or ()),
            "evidence_run_id": gathering["run_id"] if ran else None,
            "gathered": tuple(f"{o['source']} {o['outcome']}" for o in gathering["outcomes"]) if ran else ()}


def list_briefs(db: Database, limit: int = 20) -> list[dict[str, Any]]:
    """The newest briefs: brief_id, created_at, question, audit, flow_run_id (for `atlas brief list`, and the
    `brief-index` artifact's links to their runs)."""
    with db.connection() as conn:
        return conn.cursor(row_factory=dict_row).execute(
            """SELECT brief_id, created_at, question, audit, flow_run_id FROM forum.briefs
                ORDER BY created_at DESC, brief_id DESC LIMIT %s""", (limit,)).fetchall()


def load_snapshot(db: Database, brief_id: int) -> dict[str, Any]:
    """The brief's evidence snapshot: snapshot_id, seal, part_digests, created_at and the parsed
    snapshot itself (`evidence`)."""
    with db.connection() as conn:
        row = conn.cursor(row_factory=dict_row).execute(
            """SELECT s.* FROM forum.briefs b JOIN forum.evidence_snapshots s USING (snapshot_id)
                WHERE b.brief_id = %s""", (brief_id,)).fetchone()
    if row is None:
        raise BriefNotFound(brief_id)
    canonical = row.pop("canonical")
    return {**row, "evidence": json.loads(canonical)}


# ---------------------------------------------------------------- reading back for verifying


def stored_brief(db: Database, brief_id: int) -> StoredBrief:
    """What `forum_atlas.deliberation.verify.verify_report` checks: the brief's rows, its snapshot, its events
    and the audit events around them, and every citation with its chunk and the database's verbatim checks."""
    with db.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        brief = cur.execute("SELECT * FROM forum.briefs WHERE brief_id = %s", (brief_id,)).fetchone()
        if brief is None:
            raise BriefNotFound(brief_id)
        snapshot = cur.execute("SELECT * FROM forum.evidence_snapshots WHERE snapshot_id = %s",
                               (brief["snapshot_id"],)).fetchone()
        events = cur.execute(
            """SELECT event_id, kind, payload FROM forum.events
                WHERE kind IN ('BRIEF_PERSISTED', 'SOURCED_TAGS_DOWNGRADED') AND payload->>'brief_id' = %s::text
                ORDER BY event_id""",
            (brief_id,)).fetchall()
        sections = cur.execute(
            f"SELECT {', '.join(_SECTION_COLUMNS)} FROM forum.brief_sections WHERE brief_id = %s ORDER BY ordinal",
            (brief_id,)).fetchall()
        claims = cur.execute(
            f"""SELECT claim_id, {', '.join(_CLAIM_COLUMNS)} FROM forum.brief_claims WHERE brief_id = %s
                 ORDER BY section_ordinal, ordinal""", (brief_id,)).fetchall()
        citations = cur.execute(
            """SELECT t.citation_id, t.claim_id, t.chunk_id, t.quote, c.section_ordinal, c.ordinal, ch.body,
                      forum.citation_verbatim_matches_v1(t.chunk_id, t.quote) AS verbatim_v1,
                      forum.citation_verbatim_matches(t.chunk_id, t.quote) AS verbatim
                 FROM forum.citations t JOIN forum.brief_claims c USING (claim_id)
                 LEFT JOIN forum.chunks ch ON ch.chunk_id = t.chunk_id
                WHERE t.brief_id = %s ORDER BY c.section_ordinal, c.ordinal""", (brief_id,)).fetchall()
        calls = cur.execute(
            f"SELECT {', '.join(_CALL_COLUMNS)} FROM forum.provider_calls WHERE brief_id = %s ORDER BY ordinal",
            (brief_id,)).fetchall()
        ids = [e["event_id"] for e in events]
        # This brief's events, the event after each, and the predecessor of each: the links into and
        # out of the brief's events, recomputed in Python.
        around = list(read_events(conn, """WHERE event_id IN (
                WITH mine AS (SELECT unnest(%(ids)s::bigint[]) AS event_id)
                SELECT event_id FROM mine
                UNION SELECT (SELECT max(e.event_id) FROM forum.events e WHERE e.event_id < m.event_id) FROM mine m
                UNION SELECT (SELECT min(e.event_id) FROM forum.events e WHERE e.event_id > m.event_id) FROM mine m)""",
                {"ids": ids}))
    return StoredBrief(
        brief_id=brief_id, brief=brief, snapshot=snapshot, events=events, citations=citations, around=around,
        brief_row=_brief_row(brief["question"], brief["created_at"], brief["extractive"], brief["redactions"],
                             brief["flow_run_id"], brief["audit"], brief["engines"], brief["plan"]),
        section_rows=[tuple(r[k] for k in _SECTION_COLUMNS) for r in sections],
        claim_rows=[tuple(r[k] for k in _CLAIM_COLUMNS) for r in claims],
        call_rows=[tuple(r[k] for k in _CALL_COLUMNS) for r in calls])
