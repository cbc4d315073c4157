"""Briefs on the real database (AUD-1…4, DEL-3): persist, load back, verify; the verbatim
function; snapshotted importance/quality and recency; append-only for every role; one
transaction per brief; concurrent writers; tamper detection."""

from __future__ import annotations

import dataclasses
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.model import (
    AuditedClaim,
    AuditSummary,
    BriefRecord,
    Downgrade,
    Passage,
    PersonaAssignment,
    Plan,
    Redaction,
    Section,
)
from forum_atlas.deliberation.quotes import WHITESPACE, normalize_whitespace, quote_in_passage
from forum_atlas.deliberation.verify import verify_brief
from forum_atlas.integrity import canonical_json, part_digests, seal
from forum_atlas.store.briefs import (
    BriefNotFound,
    BriefRefused,
    list_briefs,
    load_brief,
    load_snapshot,
    persist_brief,
    stored_brief,
    verbatim_matches,
)
from forum_atlas.store.db import verify_audit
from forum_atlas.store.documents import update_source
from tests.support.corpus import TEST_SOURCE, ingest, record
from tests.support.snapshot import part_regions

TABLES = ("evidence_snapshots", "briefs", "brief_sections", "brief_claims", "citations", "provider_calls")

STORAGE = ("Grid storage capacity doubled in 2024.\nThe regulator, Ofgem, approved the\u00a0cap-and-floor regime "
           "for interconnectors.\tIt said “no further review” was needed.")
PRICES = "Battery pack prices fell by 20 percent in 2023.  Analysts expect further declines — “soon”."
NOW = datetime.now(UTC)


def _chunks(db) -> dict[str, dict]:
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT d.external_id, c.chunk_id, c.body, d.document_id, d.version, d.title, d.published_at
                 FROM forum.chunks c JOIN forum.documents d USING (document_id) WHERE d.is_current""").fetchall()
    return {r["external_id"]: r for r in rows}


@pytest.fixture
def corpus(db) -> dict[str, dict]:
    ingest(db, [record("storage", STORAGE, title="Storage outlook", published_at=NOW - timedelta(days=3)),
                record("prices", PRICES, title="Battery prices", published_at=NOW - timedelta(days=400))])
    return _chunks(db)


def _passage(label: str, chunk: dict) -> Passage:
    return Passage(label=label, chunk_id=chunk["chunk_id"], document_id=chunk["document_id"],
                   document_version=chunk["version"], title=chunk["title"], text=chunk["body"],
                   source_name=TEST_SOURCE.name)


def make_record(corpus: dict[str, dict], *, synthesis_quote: str = "fell by 20 percent in 2023.",
                question: str = "What happened to grid storage and battery prices?") -> BriefRecord:
    storage, prices = corpus["storage"], corpus["prices"]
    personas = (PersonaAssignment("technical", "grid storage", "grid storage capacity", "storage is technical"),
                PersonaAssignment("financial", "battery prices", "battery prices", "prices are financial"))
    plan = Plan(outbound_question=question, redactions=(Redaction("email", 3, 20, "ab" * 32, "[EMAIL]"),),
                personas=personas, planner="rules 1.0")
    verified = AuditedClaim(text="Storage capacity doubled in 2024.", claimed_tag="SOURCED", tag="SOURCED",
                            chunk_id=storage["chunk_id"], source_label="S1",
                            quote="storage capacity doubled\n in   2024.", verdict="supports")
    regulator = AuditedClaim(text="Ofgem approved a cap-and-floor regime.", claimed_tag="SOURCED", tag="SOURCED",
                             chunk_id=storage["chunk_id"], source_label="S1",
                             quote="The regulator, Ofgem, approved the cap-and-floor regime", verdict="supports")
    inferred = AuditedClaim(text="Storage growth will likely continue.", claimed_tag="INFERRED", tag="INFERRED")
    downgraded = AuditedClaim(text="Ofgem rejected interconnectors.", claimed_tag="SOURCED", tag="INFERRED",
                              chunk_id=storage["chunk_id"], source_label="S1", quote="Ofgem rejected interconnectors",
                              failed="quote_not_verbatim", detail="the quote is not in S1")
    technical = Section(role="technical", topic="grid storage", claims=[verified, regulator, inferred, downgraded],
                        attempts=1, engine="offline 1.0")
    financial = Section(role="financial", topic="battery prices", claims=[], attempts=2, engine="offline 1.0",
                        insufficient="no passage addressed battery prices after the retry")
    synthesis = Section(role="coordinator", topic="the question", engine="offline 1.0", claims=[
        AuditedClaim(text="Battery prices fell by a fifth.", claimed_tag="SOURCED", tag="SOURCED",
                     chunk_id=prices["chunk_id"], source_label="S2", quote=synthesis_quote, verdict="supports"),
        AuditedClaim(text="Cheaper storage helps the grid.", claimed_tag="INFERRED", tag="INFERRED"),
    ])
    calls = [
        CallRecord(stage="draft:technical#1", provider="offline", version="1.0", input_digest="1" * 64,
                   latency_ms=1.25, flow_run_id="flow-1", task_run_id="task-1"),
        CallRecord(stage="draft:financial#2", provider="openai", version="gpt-x", input_digest="2" * 64,
                   outcome="timeout", latency_ms=30000, attempts=3, detail="timed out after 3 attempts",
                   prompt_hash="3" * 64),
        CallRecord(stage="synthesis", provider="offline", version="1.0", input_digest="4" * 64),
    ]
    snapshot = {
        "query_plan": {"question": question, "personas": [p.role for p in personas], "top_k": 10},
        "retrieval": {"stages": [{"name": "bm25", "hits": [[storage["chunk_id"], 7.25], [prices["chunk_id"], 1.5]]},
                                 {"name": "rrf", "k": 50}], "threshold": 0.45},
        "passages": [{"label": "S1", "chunk_id": storage["chunk_id"], "text": storage["body"]},
                     {"label": "S2", "chunk_id": prices["chunk_id"], "text": prices["body"]}],
        "source_versions": {str(storage["document_id"]): storage["version"], str(prices["document_id"]): prices["version"]},
        "engines": {"draft": "offline 1.0", "support": "rules 1.0", "rerank": None},
        "providers": [c.as_dict() for c in calls],
    }
    return BriefRecord(
        question=question, plan=plan, sections=[technical, financial], synthesis=synthesis,
        audit=AuditSummary(sourced_verified=3, inferred=3, downgraded=1, retried=1, insufficient_sections=1,
                           sourced_claimed=4),
        downgrades=[Downgrade(role="technical", attempt=1, claim=downgraded.text, chunk_id=storage["chunk_id"],
                              source_label="S1", quote=downgraded.quote, failed="quote_not_verbatim",
                              detail="the quote is not in S1")],
        calls=calls, passages={storage["chunk_id"]: _passage("S1", storage), prices["chunk_id"]: _passage("S2", prices)},
        snapshot=snapshot, engines={"draft": "offline 1.0", "support": "rules 1.0"}, extractive=True,
        created_at=NOW, flow_run_id="flow-1")


def _count(conn, table: str, where: str = "") -> int:
    return conn.execute(f"SELECT count(*) AS n FROM forum.{table} {where}").fetchone()["n"]


def _superuser(database_url: str) -> psycopg.Connection:
    return psycopg.connect(database_url, autocommit=True, row_factory=dict_row)


# ---------------------------------------------------------------- round trip


def test_persist_load_and_verify_a_brief(db, corpus):
    rec = make_record(corpus)
    stored = persist_brief(db, rec)
    assert stored.seal == seal(canonical_json(rec.snapshot))

    view = load_brief(db, stored.brief_id)
    assert (view.brief_id, view.snapshot_id, view.seal) == (stored.brief_id, stored.snapshot_id, stored.seal)
    assert view.question == rec.question and view.redactions == 1 and view.extractive is True
    assert view.audit == rec.audit and view.engines == rec.engines and view.flow_run_id == "flow-1"
    assert datetime.fromisoformat(view.created_at) == NOW
    assert [(s.role, s.topic, s.attempts, s.insufficient) for s in view.sections] == [
        ("technical", "grid storage", 1, None),
        ("financial", "battery prices", 2, "no passage addressed battery prices after the retry")]
    assert view.synthesis.role == "coordinator"

    technical = view.sections[0].claims
    assert [(c.text, c.tag, c.claimed_tag, c.failed) for c in technical] == [
        (c.text, c.tag, c.claimed_tag, c.failed) for c in rec.sections[0].claims]
    assert [c.citation is not None for c in technical] == [True, True, False, False]
    assert technical[3].detail == "the quote is not in S1" and technical[3].verdict is None
    cite = technical[0].citation
    storage = corpus["storage"]
    assert (cite.label, cite.chunk_id, cite.document_id, cite.document_version) == (
        "S1", storage["chunk_id"], storage["document_id"], storage["version"])
    assert cite.passage == storage["body"] and cite.quote == "storage capacity doubled\n in   2024."
    assert (cite.title, cite.source_name, cite.importance, cite.quality_score) == (
        "Storage outlook", TEST_SOURCE.name, TEST_SOURCE.importance, TEST_SOURCE.quality_score)
    assert cite.recency_label == "days"
    assert datetime.fromisoformat(cite.published_at) == storage["published_at"]
    synthesis_cite = view.synthesis.claims[0].citation
    assert (synthesis_cite.label, synthesis_cite.recency_label) == ("S2", "older")
    assert view.synthesis.claims[1].citation is None

    assert verify_brief(stored_brief(db, stored.brief_id)) == []
    listed = list_briefs(db, limit=5)
    assert [(b["brief_id"], b["question"]) for b in listed] == [(stored.brief_id, rec.question)]
    assert listed[0]["audit"] == rec.audit.as_dict()
    snap = load_snapshot(db, stored.brief_id)
    assert snap["evidence"] == json.loads(canonical_json(rec.snapshot))
    assert snap["part_digests"] == part_digests(rec.snapshot)


def test_events_and_provider_calls_are_recorded(db, corpus):
    rec = make_record(corpus)
    stored = persist_brief(db, rec)
    with db.connection() as conn:
        events = conn.execute("SELECT kind, payload, flow_run_id FROM forum.events WHERE kind IN "
                              "('SOURCED_TAGS_DOWNGRADED', 'BRIEF_PERSISTED') ORDER BY event_id").fetchall()
        calls = conn.execute("SELECT * FROM forum.provider_calls WHERE brief_id = %s ORDER BY ordinal",
                             (stored.brief_id,)).fetchall()
        snapshot = conn.execute("SELECT * FROM forum.evidence_snapshots WHERE snapshot_id = %s",
                                (stored.snapshot_id,)).fetchone()
    assert [e["kind"] for e in events] == ["SOURCED_TAGS_DOWNGRADED", "BRIEF_PERSISTED"]
    down = events[0]["payload"]
    assert down == {"brief_id": stored.brief_id, "role": "technical", "attempt": 1,
                    "claim": "Ofgem rejected interconnectors.", "chunk_id": corpus["storage"]["chunk_id"],
                    "source_label": "S1", "quote": "Ofgem rejected interconnectors", "failed": "quote_not_verbatim",
                    "detail": "the quote is not in S1"}
    persisted = events[1]["payload"]
    assert (persisted["brief_id"], persisted["snapshot_id"], persisted["seal"]) == (
        stored.brief_id, stored.snapshot_id, stored.seal)
    assert persisted["part_digests"] == part_digests(rec.snapshot) == snapshot["part_digests"]
    assert persisted["counts"] == {"sections": 3, "claims": 6, "citations": 3, "provider_calls": 3, "downgrades": 1}
    assert events[1]["flow_run_id"] == "flow-1"
    assert snapshot["canonical"] == canonical_json(rec.snapshot)
    assert [(c["stage"], c["provider"], c["version"], c["input_digest"], c["outcome"], c["latency_ms"], c["attempts"],
             c["detail"], c["prompt_hash"], c["flow_run_id"], c["task_run_id"]) for c in calls] == [
        (c.stage, c.provider, c.version, c.input_digest, c.outcome, c.latency_ms, c.attempts, c.detail, c.prompt_hash,
         c.flow_run_id, c.task_run_id) for c in rec.calls]


def test_an_unknown_brief_is_a_clear_error(db):
    for call in (load_brief, stored_brief, load_snapshot):
        with pytest.raises(BriefNotFound, match="no brief with id 424242; `atlas brief list`"):
            call(db, 424242)
    assert list_briefs(db) == []


def test_a_non_json_snapshot_is_refused_before_anything_is_written(db, corpus):
    rec = dataclasses.replace(make_record(corpus), snapshot={"at": datetime.now(UTC)})
    with pytest.raises(ValueError, match=r"\$\.at: a datetime"):
        persist_brief(db, rec)
    with db.connection() as conn:
        assert _count(conn, "evidence_snapshots") == 0


# ---------------------------------------------------------------- the verbatim check


def test_the_verbatim_function(db, corpus):
    storage, prices = corpus["storage"]["chunk_id"], corpus["prices"]["chunk_id"]
    cases = [
        ((storage, "Grid storage capacity doubled in 2024."), True),
        ((storage, "  capacity doubled in 2024. The regulator,  "), True),          # newline -> space, trims
        ((storage, "approved the cap-and-floor regime"), True),                      # NBSP in the chunk
        ((storage, "approved the\ncap-and-floor\tregime"), True),
        ((storage, "interconnectors. It said “no further review”"), True),          # tab in the chunk
        ((prices, "in 2023. Analysts expect further declines — “soon”."), True),
        ((storage, "grid storage capacity doubled in 2024."), False),                # case change
        ((storage, "The regulator Ofgem, approved"), False),                         # comma change
        ((storage, 'It said "no further review"'), False),                          # unicode punctuation
        ((prices, "Analysts expect further declines - “soon”."), False),            # em dash -> hyphen
        ((storage, "Ofgem signed off the cap-and-floor regime"), False),             # paraphrase
        ((storage, "approved the cap-and- floor regime"), True),                     # a line-break hyphen kept
        ((storage, "approved the cap- and-floor regime"), True),                     #   by a PDF viewer's copy
        ((storage, "Grid stor- age capacity dou- bled in 2024."), True),             # words split at a line end
        ((storage, "Grid Stor- age capacity"), False),                               # ... but case still counts
        ((storage, "Grid stor- age, capacity"), False),                              # ... and punctuation
        ((storage, ""), False),
        ((storage, " \t\n\u00a0"), False),
        ((999_999_999, "Grid storage"), False),                                      # unknown chunk
        ((storage, None), False),
        ((None, "Grid storage"), False),
    ]
    with db.connection() as conn:
        assert verbatim_matches(conn, [pair for pair, _ in cases]) == [expected for _, expected in cases]
        assert verbatim_matches(conn, []) == []
        single = conn.execute("SELECT forum.citation_verbatim_matches(NULL, NULL) AS ok").fetchone()["ok"]
        assert single is False
    bodies = {storage: corpus["storage"]["body"], prices: corpus["prices"]["body"]}
    for (chunk_id, quote), expected in cases:
        assert quote_in_passage(quote, bodies.get(chunk_id)) is expected, quote


def test_sql_and_python_whitespace_agree_on_every_code_point(db):
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT cp FROM generate_series(1, 65535) cp
                WHERE cp NOT BETWEEN 55296 AND 57343 AND forum.normalize_whitespace('a' || chr(cp) || 'b') = 'a b'
               UNION ALL
               SELECT cp FROM unnest(ARRAY[65279, 119808, 128512, 917536, 1114111]) cp
                WHERE forum.normalize_whitespace('a' || chr(cp) || 'b') = 'a b'""").fetchall()
    assert {chr(r["cp"]) for r in rows} == set(WHITESPACE)


TRICKY = [
    "plain text", "  leading", "trailing  ", "\ttabs\tinside\t", "new\nline\r\nand\rcr", "nbsp\u00a0here",
    "mixed \u00a0\t\n\u2003 run", "\u3000ideographic\u3000", "line\u2028para\u2029sep", "nnbsp\u202fthin\u2009",
    "zero\u200bwidth\ufeffkept", "bom\ufeff", "“curly” ‘quotes’ — dash … ellipsis", "a\x1cb\x1dc\x1ed\x1fe\x85f",
    "\v\f", "", "   ", "Case Matters, Commas Too.",
]


def test_sql_normalisation_equals_python(db):
    with db.connection() as conn:
        rows = conn.execute("SELECT forum.normalize_whitespace(t) AS n FROM unnest(%s::text[]) WITH ORDINALITY u(t, i) "
                            "ORDER BY i", (TRICKY,)).fetchall()
    assert [r["n"] for r in rows] == [normalize_whitespace(t) for t in TRICKY] == [" ".join(t.split()) for t in TRICKY]


def test_sql_and_python_agree_on_tricky_quotes(db):
    passage = ("  The\u00a0Board,\tin its\nruling of 3\u2009May, said:\r\n“no further\u3000review” — and  "
               "declined\u2028costs…  ")
    ingest(db, [record("tricky", passage, title="Ruling")])
    chunk = _chunks(db)["tricky"]
    quotes = [
        "The Board, in its ruling", "The\tBoard,\nin its ruling", "\u00a0The Board,", "of 3 May, said:",
        "of 3\u00a0May, said:", "“no further review”", "“no further\n\nreview” — and declined costs…",
        "said: “no further review”", "declined costs…", "declined\u2029costs…", "the Board", "The Board in its",
        "said; “no further review”", '"no further review"', "no further review.", "ruling of 3 May said",
        "declined costs...", " ", "", "costs… ", "\u2003The\u2003", "Board,\u200bin",
    ]
    with db.connection() as conn:
        sql = verbatim_matches(conn, [(chunk["chunk_id"], q) for q in quotes])
    assert sql == [quote_in_passage(q, chunk["body"]) for q in quotes]
    assert sum(sql) >= 10 and not all(sql)


# ---------------------------------------------------------------- AUD-2: snapshotted at citation time


def test_importance_and_quality_are_snapshotted_when_cited(db, corpus):
    first = persist_brief(db, make_record(corpus))
    # The source's importance/quality change (only explicitly, sql/036: an ingest row saying otherwise is refused).
    update_source(db, TEST_SOURCE.name, {"importance": 5, "quality_score": 1}, "re-rated")
    with db.connection() as conn:
        assert conn.execute("SELECT importance, quality_score FROM forum.sources WHERE name = %s",
                            (TEST_SOURCE.name,)).fetchone() == {"importance": 5, "quality_score": 1}
    old = load_brief(db, first.brief_id).sections[0].claims[0].citation
    assert (old.importance, old.quality_score) == (3, 3)
    second = persist_brief(db, make_record(corpus))
    new = load_brief(db, second.brief_id).sections[0].claims[0].citation
    assert (new.importance, new.quality_score) == (5, 1)
    # A later change leaves both briefs' citations as they were when cited.
    update_source(db, TEST_SOURCE.name, {"importance": 2, "quality_score": 2}, "re-rated again")
    again = load_brief(db, first.brief_id).sections[0].claims[0].citation
    assert (again.importance, again.quality_score) == (3, 3)
    assert (load_brief(db, second.brief_id).sections[0].claims[0].citation.importance) == 5
    assert verify_brief(stored_brief(db, first.brief_id)) == [] and verify_brief(stored_brief(db, second.brief_id)) == []


def test_the_database_overrides_what_the_client_sends_for_a_citation(db, corpus, database_url):
    stored = persist_brief(db, make_record(corpus))
    with _superuser(database_url) as conn, conn.transaction():
        # A new claim in the same brief's synthesis section, cited with made-up snapshot values.
        claim_id = conn.execute(
            """INSERT INTO forum.brief_claims (brief_id, section_ordinal, ordinal, text, claimed_tag, tag, chunk_id,
                                               source_label, quote)
               VALUES (%s, 2, 99, 'x', 'SOURCED', 'SOURCED', %s, 'S9', 'Battery pack prices') RETURNING claim_id""",
            (stored.brief_id, corpus["prices"]["chunk_id"])).fetchone()["claim_id"]
        row = conn.execute(
            """INSERT INTO forum.citations (brief_id, claim_id, chunk_id, document_id, document_version, source_id,
                                            quote, importance, quality_score, recency_label, published_at, cited_at)
               VALUES (%s, %s, %s, %s, 77, %s, 'Battery pack prices', 1, 1, 'just_now', now(), '2000-01-01')
               RETURNING *""",
            (stored.brief_id, claim_id, corpus["prices"]["chunk_id"], corpus["storage"]["document_id"],
             999_999)).fetchone()
        source_id = conn.execute("SELECT source_id FROM forum.sources").fetchone()["source_id"]
        assert (row["document_id"], row["document_version"], row["source_id"]) == (
            corpus["prices"]["document_id"], corpus["prices"]["version"], source_id)
        assert (row["importance"], row["quality_score"], row["recency_label"]) == (3, 3, "older")
        assert row["published_at"] == corpus["prices"]["published_at"]
        assert row["cited_at"] > NOW - timedelta(minutes=5)
        raise psycopg.Rollback()


# ---------------------------------------------------------------- recency labels


RECENCY_BOUNDARIES = [
    (timedelta(0), "just_now"),
    (timedelta(minutes=60) - timedelta(microseconds=1), "just_now"),
    (timedelta(minutes=60), "hours"),
    (timedelta(hours=24) - timedelta(microseconds=1), "hours"),
    (timedelta(hours=24), "days"),
    (timedelta(days=7) - timedelta(microseconds=1), "days"),
    (timedelta(days=7), "weeks"),
    (timedelta(days=30) - timedelta(microseconds=1), "weeks"),
    (timedelta(days=30), "months"),
    (timedelta(days=365) - timedelta(microseconds=1), "months"),
    (timedelta(days=365), "older"),
    (timedelta(days=3650), "older"),
    (timedelta(microseconds=-1), "undated"),    # published after the moment
    (None, "undated"),
]


def test_recency_label_boundaries(db):
    with db.connection() as conn:
        for zone in ("UTC", "Europe/London", "America/New_York"):
            conn.execute(f"SET TIME ZONE '{zone}'")
            for at in (datetime(2024, 3, 31, 1, 30, tzinfo=UTC),    # across DST changes
                       datetime(2024, 11, 3, 6, 30, tzinfo=UTC)):
                for age, label in RECENCY_BOUNDARIES:
                    published = None if age is None else at - age
                    got = conn.execute("SELECT forum.recency_label(%s, %s) AS l", (published, at)).fetchone()["l"]
                    assert got == label, (zone, at, age)
        assert conn.execute("SELECT forum.recency_label(now(), NULL) AS l").fetchone()["l"] == "undated"


def test_citations_carry_the_recency_of_their_document(db):
    ages = {"minutes": timedelta(minutes=30), "hours": timedelta(hours=5), "days": timedelta(days=3),
            "weeks": timedelta(days=14), "months": timedelta(days=60), "years": timedelta(days=800),
            "undated": None, "future": timedelta(days=-1)}
    now = datetime.now(UTC)
    ingest(db, [record(name, f"Document {name} says the figure is {i}.", title=name,
                       published_at=None if age is None else now - age) for i, (name, age) in enumerate(ages.items())])
    chunks = _chunks(db)
    rec = make_record({"storage": chunks["minutes"], "prices": chunks["hours"]},
                      synthesis_quote="the figure is 1.")
    rec.sections[0].claims[:] = [c for c in rec.sections[0].claims if c.tag == "INFERRED"]
    rec.synthesis.claims[:] = [
        AuditedClaim(text=name, claimed_tag="SOURCED", tag="SOURCED", chunk_id=chunks[name]["chunk_id"],
                     source_label=f"S{i}", quote=f"the figure is {i}.") for i, name in enumerate(ages)]
    view = load_brief(db, persist_brief(db, rec).brief_id)
    labels = {c.text: c.citation.recency_label for c in view.synthesis.claims}
    assert labels == {"minutes": "just_now", "hours": "hours", "days": "days", "weeks": "weeks", "months": "months",
                      "years": "older", "undated": "undated", "future": "undated"}


# ---------------------------------------------------------------- AUD-1: append-only


_SET = {"evidence_snapshots": "created_at = created_at", "briefs": "question = question",
        "brief_sections": "topic = topic", "brief_claims": "text = text", "citations": "quote = quote",
        "provider_calls": "detail = detail"}


def _mutations(table: str) -> list[str]:
    return [f"UPDATE forum.{table} SET {_SET[table]}", f"DELETE FROM forum.{table}", f"TRUNCATE forum.{table} CASCADE"]


def _assert_append_only(conn) -> None:
    for table in TABLES:
        for statement in _mutations(table):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"is append-only: \w+ refused"), \
                    conn.transaction():
                conn.execute(statement)


def _row_counts(conn) -> dict[str, int]:
    return {t: _count(conn, t) for t in TABLES}


def test_briefs_are_append_only_for_the_superuser(db, corpus, database_url):
    persist_brief(db, make_record(corpus))
    with _superuser(database_url) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()["rolsuper"]
        before = _row_counts(conn)
        assert all(before.values())
        _assert_append_only(conn)
        assert _row_counts(conn) == before


def test_briefs_are_append_only_even_for_a_role_granted_update_delete_truncate(db, corpus, database_url):
    persist_brief(db, make_record(corpus))
    role = f"atlas_app_{uuid.uuid4().hex[:12]}"
    bare = f"{role}_bare"
    with _superuser(database_url) as conn:
        before = _row_counts(conn)
        conn.execute(f"CREATE ROLE {role} NOLOGIN")
        conn.execute(f"CREATE ROLE {bare} NOLOGIN")
        try:
            conn.execute(f"GRANT USAGE ON SCHEMA forum TO {role}, {bare}")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA forum TO {role}")
            conn.execute(f"SET ROLE {role}")
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()["rolsuper"] is False
            _assert_append_only(conn)
            # Without a grant, PUBLIC's privileges are all a role has: none of these.
            conn.execute(f"SET ROLE {bare}")
            for table in TABLES:
                for statement in _mutations(table):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), \
                            conn.transaction():
                        conn.execute(statement)
            conn.execute("RESET ROLE")
            assert _row_counts(conn) == before
        finally:
            conn.execute("RESET ROLE")
            conn.execute(f"DROP OWNED BY {role}, {bare}")
            conn.execute(f"DROP ROLE {role}")
            conn.execute(f"DROP ROLE {bare}")
    with _superuser(database_url) as conn:
        assert conn.execute("SELECT count(*) AS n FROM pg_roles WHERE rolname LIKE %s", (role + "%",)).fetchone()["n"] == 0


# ---------------------------------------------------------------- one transaction, guarded invariants


def test_a_non_verbatim_citation_is_refused_and_nothing_is_written(db, corpus):
    with db.connection() as conn:
        events_before = _count(conn, "events")
    rec = make_record(corpus, synthesis_quote="prices fell by a fifth in 2023.")  # a paraphrase
    with pytest.raises(BriefRefused, match="does not occur verbatim"):
        persist_brief(db, rec)
    with db.connection() as conn:
        assert _row_counts(conn) == dict.fromkeys(TABLES, 0)
        assert _count(conn, "events") == events_before
    # The same brief with the real quote goes in.
    assert verify_brief(stored_brief(db, persist_brief(db, make_record(corpus)).brief_id)) == []


def test_the_database_refuses_what_breaks_the_citation_rules(db, corpus, database_url):
    stored = persist_brief(db, make_record(corpus))
    chunk = corpus["storage"]["chunk_id"]

    def claim(conn, quote: str, tag: str = "SOURCED", ordinal: int = 50) -> int:
        return conn.execute(
            """INSERT INTO forum.brief_claims (brief_id, section_ordinal, ordinal, text, claimed_tag, tag, chunk_id,
                                               quote) VALUES (%s, 0, %s, 'x', 'SOURCED', %s, %s, %s)
               RETURNING claim_id""",
            (stored.brief_id, ordinal, tag, chunk, quote)).fetchone()["claim_id"]

    with _superuser(database_url) as conn:
        cases = [
            (lambda: conn.execute("INSERT INTO forum.citations (claim_id) VALUES (%s)", (claim(conn, "Ofgem signed off"),)),
             "does not occur verbatim"),
            (lambda: conn.execute("INSERT INTO forum.citations (claim_id, quote) VALUES (%s, 'Grid storage')",
                                  (claim(conn, "Grid storage capacity"),)),
             "must be the claim's own"),
            # A verified SOURCED claim without a citation is refused at commit.
            (lambda: claim(conn, "Grid storage capacity"), "is SOURCED but has no citation"),
            (lambda: conn.execute(
                """INSERT INTO forum.brief_claims (brief_id, section_ordinal, ordinal, text, claimed_tag, tag)
                   VALUES (%s, 0, 60, 'x', 'SOURCED', 'SOURCED')""", (stored.brief_id,)),
             "brief_claims_sourced_cites"),
            (lambda: conn.execute(
                """INSERT INTO forum.brief_claims (brief_id, section_ordinal, ordinal, text, claimed_tag, tag)
                   VALUES (%s, 0, 61, 'x', 'INFERRED', 'INFERRED'), (%s, 0, 62, 'y', 'SOURCED', 'INFERRED')""",
                (stored.brief_id, stored.brief_id)),
             "brief_claims_failed_iff_downgraded"),
        ]
        for action, message in cases:
            with pytest.raises(psycopg.errors.IntegrityError, match=message), conn.transaction():
                action()
        # An INFERRED claim is never cited.
        with pytest.raises(psycopg.errors.CheckViolation, match="only a verified SOURCED claim"), conn.transaction():
            inferred = conn.execute(
                """INSERT INTO forum.brief_claims (brief_id, section_ordinal, ordinal, text, claimed_tag, tag)
                   VALUES (%s, 0, 70, 'x', 'INFERRED', 'INFERRED') RETURNING claim_id""",
                (stored.brief_id,)).fetchone()["claim_id"]
            conn.execute("INSERT INTO forum.citations (claim_id, chunk_id, quote) VALUES (%s, %s, 'Grid')",
                         (inferred, chunk))
        # A snapshot whose seal is not the sha256 of its text.
        with pytest.raises(psycopg.errors.CheckViolation, match="evidence_snapshots_sealed"):
            conn.execute("INSERT INTO forum.evidence_snapshots (canonical, seal) VALUES ('{}', %s)", ("0" * 64,))
    assert verify_brief(stored_brief(db, stored.brief_id)) == []


def test_twenty_concurrent_briefs_all_land(db, corpus):
    records = [make_record(corpus, question=f"Question {i} about storage?") for i in range(20)]
    with ThreadPoolExecutor(max_workers=20) as pool:
        stored = list(pool.map(lambda r: persist_brief(db, r), records, timeout=120))
    assert len({s.brief_id for s in stored}) == 20 and len({s.snapshot_id for s in stored}) == 20
    with db.connection() as conn:
        assert _row_counts(conn) == {"evidence_snapshots": 20, "briefs": 20, "brief_sections": 60,
                                     "brief_claims": 120, "citations": 60, "provider_calls": 60}
        assert _count(conn, "events", "WHERE kind = 'BRIEF_PERSISTED'") == 20
        assert _count(conn, "events", "WHERE kind = 'SOURCED_TAGS_DOWNGRADED'") == 20
        assert verify_audit(conn).intact
    questions = {load_brief(db, s.brief_id).question for s in stored}
    assert questions == {r.question for r in records}
    assert all(verify_brief(stored_brief(db, s.brief_id)) == [] for s in stored)


# ---------------------------------------------------------------- tampering is detected


def test_flipping_a_byte_of_a_snapshot_is_detected_and_names_the_part(db, corpus, database_url):
    rec = make_record(corpus)
    stored = persist_brief(db, rec)
    other = persist_brief(db, make_record(corpus, question="An untouched brief?"))
    text = canonical_json(rec.snapshot)
    regions = part_regions(rec.snapshot)
    assert regions[-1][2] == len(text)
    # Every part boundary (the bytes around it) plus a stride through the rest.
    positions = sorted({p for _, start, end in regions for p in (start, start + 1, start + 2, end - 2, end - 1)}
                       | set(range(0, len(text), 23)))
    sid = stored.snapshot_id
    with _superuser(database_url) as conn:
        conn.execute("ALTER TABLE forum.evidence_snapshots DISABLE TRIGGER evidence_snapshots_append_only")
        try:
            for i in positions:
                flipped = text[:i] + chr(ord(text[i]) ^ 1) + text[i + 1:]
                # A careful tamperer keeps the row self-consistent: new seal, new part digests.
                conn.execute("UPDATE forum.evidence_snapshots SET canonical = %s, seal = %s WHERE snapshot_id = %s",
                             (flipped, seal(flipped), sid))
                part = next(k for k, start, end in regions if start <= i < end)
                problems = verify_brief(stored_brief(db, stored.brief_id))
                assert any(p.startswith(f"evidence snapshot {sid}: part {part!r}") for p in problems), (i, problems)
                assert any("seal recorded in the audit log" in p for p in problems)
            # A careless one leaves the stored seal: the snapshot no longer matches it either.
            conn.execute("ALTER TABLE forum.evidence_snapshots DROP CONSTRAINT evidence_snapshots_sealed")
            i = text.index('"top_k":10') + len('"top_k":1')
            flipped = text[:i] + "1" + text[i + 1:]
            conn.execute("UPDATE forum.evidence_snapshots SET canonical = %s, seal = %s WHERE snapshot_id = %s",
                         (flipped, stored.seal, sid))
            problems = verify_brief(stored_brief(db, stored.brief_id))
            assert f"evidence snapshot {sid}: its canonical text no longer matches its stored seal" in problems
            assert any(p.startswith(f"evidence snapshot {sid}: part 'query_plan'") for p in problems)
            conn.execute("UPDATE forum.evidence_snapshots SET canonical = %s WHERE snapshot_id = %s", (text, sid))
        finally:
            conn.execute("ALTER TABLE forum.evidence_snapshots ENABLE TRIGGER evidence_snapshots_append_only")
    assert verify_brief(stored_brief(db, stored.brief_id)) == []  # the original text restored verifies again
    assert verify_brief(stored_brief(db, other.brief_id)) == []


def test_tampered_rows_chunks_and_events_are_detected(db, corpus, database_url):
    stored = persist_brief(db, make_record(corpus))
    bid = stored.brief_id
    storage = corpus["storage"]
    with _superuser(database_url) as conn:
        # A claim rewritten behind the triggers' back.
        conn.execute("ALTER TABLE forum.brief_claims DISABLE TRIGGER brief_claims_append_only")
        conn.execute("UPDATE forum.brief_claims SET text = 'Storage capacity tripled.' WHERE brief_id = %s AND ordinal = 0 "
                     "AND section_ordinal = 0", (bid,))
        conn.execute("ALTER TABLE forum.brief_claims ENABLE TRIGGER brief_claims_append_only")
        expected = (f"brief {bid}: its claims no longer match what was persisted "
                    f"(digest in event {_persisted_event(conn, bid)})")
        assert verify_brief(stored_brief(db, bid)) == [expected]
        # The cited chunk's text changed under the citation (same length, one letter).
        body = storage["body"].replace("doubled", "doublet")
        conn.execute("ALTER TABLE forum.chunks DISABLE TRIGGER chunks_content_immutable")
        conn.execute("UPDATE forum.chunks SET body = %s WHERE chunk_id = %s", (body, storage["chunk_id"]))
        conn.execute("ALTER TABLE forum.chunks ENABLE TRIGGER chunks_content_immutable")
        problems = verify_brief(stored_brief(db, bid))
        assert sum("no longer occurs verbatim in chunk" in p for p in problems) == 1
        # The audit log's BRIEF_PERSISTED event edited: the chain breaks there.
        conn.execute("ALTER TABLE forum.events DISABLE TRIGGER events_append_only")
        conn.execute("""UPDATE forum.events SET payload = jsonb_set(payload, '{seal}', to_jsonb(repeat('0', 64)))
                         WHERE kind = 'BRIEF_PERSISTED' AND payload->>'brief_id' = %s::text""", (bid,))
        conn.execute("ALTER TABLE forum.events ENABLE TRIGGER events_append_only")
        problems = verify_brief(stored_brief(db, bid))
        assert f"audit log event {_persisted_event(conn, bid)}: row_hash does not match the row content" in problems
        assert any("seal recorded in the audit log" in p for p in problems)


def _persisted_event(conn, brief_id: int) -> int:
    return conn.execute("SELECT event_id FROM forum.events WHERE kind = 'BRIEF_PERSISTED' AND payload->>'brief_id' = %s",
                        (str(brief_id),)).fetchone()["event_id"]
