"""AUD-5: the attacks of issue 10 (a user with database access) reproduced — each is now refused by
the database or reported by the audit verification, naming the row."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from datetime import date, datetime, timezone

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import Record, SourceInfo, source_conflict
from forum_atlas.store import forecasts as repo
from forum_atlas.store.db import ChainHead, chain_head, record_event, verify_audit
from forum_atlas.store.documents import known_versions, write_batch
from forum_atlas.tasks.forecasting import issue_bound_forecast
from forum_atlas.tasks.scoring import run_scoring
from tests.store.test_briefs import corpus, make_record  # noqa: F401  (corpus is a fixture, reused)
from tests.support.series import load_series_files

SOURCE = SourceInfo("Gazette", 5, 4, "OGL-3.0", "https://gazette.example", "energy")
EMBEDDER = HashedEmbedder(dim=64)
UTC = timezone.utc


def _record(ext_id: str, text: str, **changes) -> Record:
    return dataclasses.replace(Record(external_id=ext_id, title=f"Title {ext_id}", text=text, source=SOURCE,
                                      sector="energy"), **changes)


CORPUS = [_record(str(i), f"Grid demand rose by {i} percent. Storage capacity doubled in region {i}.") for i in range(5)]


def _ingest(db, records):
    known = known_versions(db, records)
    new = [r for r in records if (r.source.name, r.external_id, r.content_hash) not in known]
    return write_batch(db, records, prepare(new, EMBEDDER), source_conflict)


@contextmanager
def _superuser(database_url):
    """The attacker: a superuser session, autocommit, able to switch triggers off."""
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        yield conn


@contextmanager
def _triggers_off(conn, table):
    conn.execute(f"ALTER TABLE forum.{table} DISABLE TRIGGER ALL")
    try:
        yield
    finally:
        conn.execute(f"ALTER TABLE forum.{table} ENABLE TRIGGER ALL")


def _report(db, head=None):
    with db.connection() as conn:
        return verify_audit(conn, head)


def _content(report):
    """(table, row, problem) without the details in parentheses (digests, the row's key)."""
    return [(p["table_name"], p["row_id"], p["problem"].split(" (")[0]) for p in report.content]


# ---------------------------------------------------------------- chunks and documents


def test_ingestion_records_and_anchors_digests_and_verifies(db):
    result = _ingest(db, CORPUS)
    report = _report(db)
    assert report.intact and report.events == 1
    # 5 documents + 5 chunks, anchored by the batch's own INGEST_BATCH event.
    assert report.content_rows == 10
    with db.connection() as conn:
        event = conn.execute("SELECT kind, digests FROM forum.events WHERE event_id = %s",
                             (result.event_id,)).fetchone()
    assert event["kind"] == "INGEST_BATCH"
    assert {t: v["rows"] for t, v in event["digests"]["tables"].items()} == {"chunks": 5, "documents": 5}
    # Status changes (a retraction, a new version) still go through and still verify.
    _ingest(db, [dataclasses.replace(CORPUS[0], retracted=True),
                 dataclasses.replace(CORPUS[1], text=CORPUS[1].text + " Prices fell.")])
    with db.connection() as conn:
        flags = conn.execute("""SELECT d.external_id, d.version, d.is_current, bool_and(c.searchable) AS searchable
                                  FROM forum.documents d JOIN forum.chunks c USING (document_id)
                                 WHERE d.external_id IN ('0', '1') GROUP BY 1, 2, 3 ORDER BY 1, 2""").fetchall()
    assert [tuple(r.values()) for r in flags] == [("0", 1, True, False), ("1", 1, False, False), ("1", 2, True, True)]
    assert _report(db).intact


def test_content_of_chunks_and_documents_is_refused_but_flags_change(db, database_url):
    _ingest(db, CORPUS)
    with _superuser(database_url) as conn:
        chunk = conn.execute("SELECT chunk_id, body FROM forum.chunks ORDER BY chunk_id LIMIT 1").fetchone()
        refused = [
            ("UPDATE forum.chunks SET body = 'Grid demand fell' WHERE chunk_id = %s", "chunks keeps its content"),
            ("UPDATE forum.chunks SET heading = 'x' WHERE chunk_id = %s", "chunks keeps its content"),
            ("UPDATE forum.chunks SET start_char = start_char WHERE chunk_id = %s AND false", None),
            ("DELETE FROM forum.chunks WHERE chunk_id = %s", "append-only"),
            ("UPDATE forum.documents SET body = 'forged' WHERE document_id = %s", "documents keeps its content"),
            ("UPDATE forum.documents SET title = 'forged' WHERE document_id = %s", "documents keeps its content"),
            ("UPDATE forum.documents SET content_hash = repeat('0', 64) WHERE document_id = %s",
             "documents keeps its content"),
            ("DELETE FROM forum.documents WHERE document_id = %s", "append-only"),
        ]
        for statement, message in refused:
            if message is None:
                conn.execute(statement, (chunk["chunk_id"],))
                continue
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match=message):
                conn.execute(statement, (chunk["chunk_id"],))
        for table in ("chunks", "documents"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                conn.execute(f"TRUNCATE forum.{table} CASCADE")
        # Flags change through their path; the chunk text is untouched.
        conn.execute("""UPDATE forum.documents SET withdrawn = true
                         WHERE document_id = (SELECT document_id FROM forum.chunks WHERE chunk_id = %s)""",
                     (chunk["chunk_id"],))
        row = conn.execute("SELECT body, searchable FROM forum.chunks WHERE chunk_id = %s", (chunk["chunk_id"],)).fetchone()
        assert row == {"body": chunk["body"], "searchable": False}
    assert _report(db).intact


def test_chunk_body_edited_with_triggers_disabled_is_named_by_verify(db, database_url):
    _ingest(db, CORPUS)
    with _superuser(database_url) as conn:
        chunk_id = conn.execute("SELECT chunk_id FROM forum.chunks ORDER BY chunk_id OFFSET 2 LIMIT 1").fetchone()["chunk_id"]
        with _triggers_off(conn, "chunks"):
            conn.execute("UPDATE forum.chunks SET body = replace(body, 'rose', 'fell') WHERE chunk_id = %s", (chunk_id,))
    report = _report(db)
    assert not report.intact and report.chain == []  # the chain alone would have said "intact"
    assert _content(report) == [("chunks", chunk_id, "content differs from the digest recorded when it was written")]
    assert report.content[0]["event_id"] == 1


def test_digest_table_rewritten_too_is_caught_by_the_anchor(db, database_url):
    _ingest(db, CORPUS)
    with _superuser(database_url) as conn:
        with _triggers_off(conn, "chunks"), _triggers_off(conn, "content_digests"):
            conn.execute("UPDATE forum.chunks SET body = replace(body, 'rose', 'fell') WHERE chunk_id = 1")
            conn.execute("""UPDATE forum.content_digests d SET digest = forum.content_digest(c)
                              FROM forum.chunks c WHERE d.table_name = 'chunks' AND d.row_id = c.chunk_id""")
        # A chunk deleted, and a document deleted with its digest row.
        with _triggers_off(conn, "chunks"), _triggers_off(conn, "embeddings"):
            conn.execute("DELETE FROM forum.embeddings WHERE chunk_id = 5")
            conn.execute("DELETE FROM forum.chunks WHERE chunk_id = 5")
    report = _report(db)
    assert ("chunks", None, "the 5 digests this event anchors were altered") in _content(report)
    assert ("chunks", 5, "row is missing") in _content(report)


def test_row_inserted_behind_the_triggers_is_reported(db, database_url):
    _ingest(db, CORPUS[:1])
    with _superuser(database_url) as conn, _triggers_off(conn, "chunks"):
        conn.execute("""INSERT INTO forum.chunks (chunk_key, document_id, ordinal, start_char, end_char, heading, body,
                                                  lexemes, token_count)
                        SELECT 'planted', document_id, 9, 0, 4, '', 'Grid', 'grid'::tsvector, 1 FROM forum.documents""")
        planted = conn.execute("SELECT chunk_id FROM forum.chunks WHERE chunk_key = 'planted'").fetchone()["chunk_id"]
    assert _content(_report(db)) == [
        ("chunks", planted, "no digest was recorded for this row")]


# ---------------------------------------------------------------- scores and vintages


@pytest.fixture
def scored(db, shared_data):
    series = shared_data / "series"
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv", series / "UNRATE__fred_vintage_2026-03.csv"])
    issue_bound_forecast(db, LaneQuestion(key="u", series_id="UNRATE", comparator=">", reference="previous",
                                          target_date=date(2025, 4, 1)), datetime(2025, 4, 15, tzinfo=UTC), None,
                         seed=1)
    with db.transaction() as conn:
        run_scoring(conn, mode="nightly", as_of=datetime(2026, 3, 31, tzinfo=UTC))
    with db.connection() as conn:
        rows = conn.execute("SELECT score_id, outcome FROM forum.forecast_scores WHERE status = 'resolved'").fetchall()
    assert rows
    return rows[0]


def test_scores_and_vintages_are_anchored(db, scored):
    report = _report(db)
    assert report.intact
    with db.connection() as conn:
        anchored = conn.execute("""SELECT kind, digests -> 'tables' AS tables FROM forum.events
                                    WHERE digests IS NOT NULL ORDER BY event_id""").fetchall()
    kinds = {r["kind"]: set(r["tables"]) for r in anchored}
    assert kinds["SERIES_VINTAGE_STORED"] == {"series_vintages", "series_observations"}
    assert kinds["FORECAST_BOUND"] == {"forecasts", "forecast_bindings"}
    assert kinds["FORECAST_SCORES_WRITTEN"] == {"forecast_scores"}


def test_flipped_score_outcome_with_triggers_disabled_is_named_by_verify(db, scored, database_url):
    with _superuser(database_url) as conn, _triggers_off(conn, "forecast_scores"):
        conn.execute("""UPDATE forum.forecast_scores SET outcome = 1 - outcome,
                               brier = (probability - (1 - outcome)) ^ 2 WHERE score_id = %s""", (scored["score_id"],))
    report = _report(db)
    assert report.chain == []
    assert _content(report) == [("forecast_scores", scored["score_id"],
                                 "content differs from the digest recorded when it was written")]


def test_vintage_content_hash_edited_is_named_by_verify(db, scored, database_url):
    with _superuser(database_url) as conn, _triggers_off(conn, "series_vintages"):
        vintage = conn.execute("SELECT min(vintage_id) AS v FROM forum.series_vintages").fetchone()["v"]
        conn.execute("UPDATE forum.series_vintages SET content_hash = repeat('a', 64) WHERE vintage_id = %s", (vintage,))
    assert _content(_report(db)) == [("series_vintages", vintage,
                                      "content differs from the digest recorded when it was written")]


# ---------------------------------------------------------------- the chain head


def _events(db, n):
    with db.transaction() as conn:
        for i in range(n):
            record_event(conn, "TEST_EVENT", {"i": i})


def test_deleting_the_last_event_is_detected_against_the_exported_head(db, database_url):
    _events(db, 4)
    with db.connection() as conn:
        head = chain_head(conn)
    assert (head.event_id, str(head)) == (4, f"4:{head.row_hash}")
    assert _report(db, head).intact and _report(db, ChainHead.parse(head.row_hash)).intact
    with _superuser(database_url) as conn, _triggers_off(conn, "events"):
        conn.execute("DELETE FROM forum.events WHERE event_id = 4")
    bare = _report(db)
    assert bare.intact  # the attack as reported: the chain alone still verifies
    report = _report(db, head)
    assert not report.intact and report.chain == []
    assert report.head_problem == ("event 4 of the exported head is missing (the log now ends at 3): "
                                   "events were deleted")
    assert "no event has the exported head's row_hash" in _report(db, ChainHead.parse(head.row_hash)).head_problem


def test_deleting_a_middle_event_and_recomputing_the_chain_is_detected_against_the_head(db, database_url):
    _events(db, 5)
    with db.connection() as conn:
        head = chain_head(conn)
    with _superuser(database_url) as conn, _triggers_off(conn, "events"):
        conn.execute("DELETE FROM forum.events WHERE event_id = 2")
        prev = conn.execute("SELECT row_hash FROM forum.events WHERE event_id = 1").fetchone()["row_hash"]
        for e in conn.execute("SELECT * FROM forum.events WHERE event_id > 1 ORDER BY event_id").fetchall():
            row_hash = conn.execute("SELECT forum.event_hash(%s, %s, %s, %s, %s, %s) AS h",
                                    (prev, e["event_id"], e["occurred_at"], e["kind"], e["flow_run_id"],
                                     psycopg.types.json.Jsonb(e["payload"]))).fetchone()["h"]
            conn.execute("UPDATE forum.events SET prev_hash = %s, row_hash = %s WHERE event_id = %s",
                         (prev, row_hash, e["event_id"]))
            prev = row_hash
    assert _report(db).intact  # recomputed: the chain alone verifies
    report = _report(db, head)
    assert report.head_problem == ("event 5 no longer has the exported head's row_hash: the chain up to it "
                                   "was rewritten")


def test_recomputing_everything_after_a_score_flip_still_fails_against_the_head(db, scored, database_url):
    """The strongest attacker: flips a score, rewrites its digest, the anchoring event's digests and
    the chain from there on. Only the head kept outside the database catches it."""
    with db.connection() as conn:
        head = chain_head(conn)
    sid = scored["score_id"]
    with _superuser(database_url) as conn:
        conn.execute("SET session_replication_role = replica")  # every trigger off for this session
        conn.execute("UPDATE forum.forecast_scores SET outcome = 1 - outcome WHERE score_id = %s", (sid,))
        conn.execute("""UPDATE forum.content_digests d SET digest = forum.content_digest(s)
                          FROM forum.forecast_scores s WHERE d.table_name = 'forecast_scores' AND d.row_id = s.score_id""")
        conn.execute("""UPDATE forum.events SET digests = jsonb_set(digests, '{tables}',
                               forum.digest_anchor((digests->>'xact')::bigint, (digests->>'after')::bigint,
                                                   (digests->>'through')::bigint))
                         WHERE kind = 'FORECAST_SCORES_WRITTEN'""")
        prev = "genesis"
        for e in conn.execute("SELECT * FROM forum.events ORDER BY event_id").fetchall():
            row_hash = conn.execute(
                "SELECT forum.event_row_hash(%s, %s, %s, %s, %s, %s, %s) AS h",
                (prev, e["event_id"], e["occurred_at"], e["kind"], e["flow_run_id"],
                 psycopg.types.json.Jsonb(e["payload"]),
                 None if e["digests"] is None else psycopg.types.json.Jsonb(e["digests"]))).fetchone()["h"]
            conn.execute("UPDATE forum.events SET prev_hash = %s, row_hash = %s WHERE event_id = %s",
                         (prev, row_hash, e["event_id"]))
            prev = row_hash
    assert _report(db).intact  # nothing inside the database can tell
    assert "no longer has the exported head's row_hash" in _report(db, head).head_problem


def test_head_parsing():
    h = "ab" * 32
    assert ChainHead.parse(f"12:{h}") == ChainHead(12, h)
    assert ChainHead.parse(h.upper()) == ChainHead(0, h)
    for bad in ("12:xyz", "x:" + h, ""):
        with pytest.raises(ValueError, match="not a chain head"):
            ChainHead.parse(bad)


def test_a_persisted_brief_anchors_its_evidence_snapshot(db, corpus, database_url):
    from forum_atlas.store.briefs import persist_brief

    stored = persist_brief(db, make_record(corpus))
    assert _report(db).intact
    with _superuser(database_url) as conn, _triggers_off(conn, "evidence_snapshots"):
        snapshot = conn.execute("SELECT snapshot_id FROM forum.briefs WHERE brief_id = %s",
                                (stored.brief_id,)).fetchone()["snapshot_id"]
        conn.execute("UPDATE forum.evidence_snapshots SET part_digests = '{}' WHERE snapshot_id = %s", (snapshot,))
    assert _content(_report(db)) == [("evidence_snapshots", snapshot,
                                      "content differs from the digest recorded when it was written")]


def test_rows_stored_before_the_migration_are_anchored_by_a_baseline_event(empty_database_url):
    from forum_atlas.store import migrations

    with psycopg.connect(empty_database_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn, before=32)
        conn.execute("""INSERT INTO forum.sources (name, importance, quality_score, licence) VALUES ('S', 3, 3, 'x')""")
        conn.execute("""INSERT INTO forum.documents (source_id, external_id, version, content_hash, body)
                        VALUES (1, 'a', 1, repeat('1', 64), 'Grid demand rose.')""")
        conn.execute("""INSERT INTO forum.chunks (chunk_key, document_id, ordinal, start_char, end_char, body)
                        VALUES ('a#0', 1, 0, 0, 17, 'Grid demand rose.')""")
        record_event(conn, "TEST_EVENT", {"before": True})
        assert "032_tamper_evidence.sql" in migrations.apply_pending(conn)
        report = verify_audit(conn)
        assert report.intact and (report.events, report.content_rows) == (2, 2)
        baseline = conn.execute("SELECT kind, digests FROM forum.events WHERE event_id = 2").fetchone()
        assert baseline["kind"] == "CONTENT_DIGESTS_BASELINE"
        assert {t: v["rows"] for t, v in baseline["digests"]["tables"].items()} == {"chunks": 1, "documents": 1}
        conn.execute("ALTER TABLE forum.chunks DISABLE TRIGGER USER")
        conn.execute("UPDATE forum.chunks SET body = 'Grid demand fell.' WHERE chunk_id = 1")
        assert _content(verify_audit(conn)) == [
            ("chunks", 1, "content differs from the digest recorded when it was written")]
