"""Writing batches against the real database: idempotence, versions, status flags, guards."""

import dataclasses
import uuid

import psycopg
import pytest

from forum_atlas.config import settings_from_env
from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import Record, SourceInfo, source_conflict
from forum_atlas.store.db import record_event, verify_events
from forum_atlas.store.documents import hnsw_build_memory_mb, known_versions, write_batch

SOURCE = SourceInfo("Gazette", 5, 4, "OGL-3.0", "https://gazette.example", "energy")
EMBEDDER = HashedEmbedder(dim=64)


def _record(ext_id: str, text: str, **changes) -> Record:
    return dataclasses.replace(Record(external_id=ext_id, title=f"Title {ext_id}", text=text, source=SOURCE, sector="energy"), **changes)


def _ingest(db, records):
    known = known_versions(db, records)
    new = [r for r in records if (r.source.name, r.external_id, r.content_hash) not in known]
    return write_batch(db, records, prepare(new, EMBEDDER), source_conflict)


def _counts(db):
    with db.connection() as conn:
        return conn.execute(
            """SELECT (SELECT count(*) FROM forum.documents) AS documents, (SELECT count(*) FROM forum.chunks) AS chunks,
                      (SELECT count(*) FROM forum.embeddings) AS embeddings,
                      (SELECT count(*) FROM forum.chunks WHERE searchable) AS searchable"""
        ).fetchone()


CORPUS = [_record(str(i), f"Grid demand rose by {i} percent. Storage capacity doubled in region {i}.") for i in range(20)]


def test_reingesting_identical_content_adds_nothing(db):
    first = _ingest(db, CORPUS)
    assert (first.documents_added, first.chunks_added, first.embeddings_added) == (20, 20, 20)
    before = _counts(db)
    again = _ingest(db, CORPUS)
    assert (again.documents_added, again.chunks_added, again.status_changes, again.event_id) == (0, 0, 0, None)
    assert _counts(db) == before


def test_changed_text_adds_one_version_and_keeps_the_old(db):
    _ingest(db, CORPUS)
    changed = CORPUS[:3] + [dataclasses.replace(CORPUS[3], text=CORPUS[3].text + " Prices fell.")] + CORPUS[4:]
    result = _ingest(db, changed)
    assert result.documents_added == 1
    with db.connection() as conn:
        versions = conn.execute(
            "SELECT version, is_current, content_hash FROM forum.documents WHERE external_id = '3' ORDER BY version"
        ).fetchall()
        searchable = conn.execute(
            """SELECT d.version, bool_and(c.searchable) AS searchable FROM forum.documents d
                 JOIN forum.chunks c USING (document_id) WHERE d.external_id = '3' GROUP BY d.version ORDER BY 1"""
        ).fetchall()
    assert [(v["version"], v["is_current"]) for v in versions] == [(1, False), (2, True)]
    assert versions[1]["content_hash"] == changed[3].content_hash
    assert [(s["version"], s["searchable"]) for s in searchable] == [(1, False), (2, True)]
    # Reverting to the first text makes version 1 current again instead of adding a third.
    assert _ingest(db, CORPUS).documents_added == 0
    with db.connection() as conn:
        current = conn.execute("SELECT version FROM forum.documents WHERE external_id = '3' AND is_current").fetchone()
    assert current["version"] == 1


def test_retraction_takes_chunks_out_of_retrieval(db):
    _ingest(db, CORPUS)
    result = _ingest(db, [dataclasses.replace(CORPUS[0], retracted=True), dataclasses.replace(CORPUS[1], withdrawn=True)])
    assert result.status_changes == 2 and result.documents_added == 0
    assert _counts(db)["searchable"] == 18
    _ingest(db, [CORPUS[0]])
    assert _counts(db)["searchable"] == 19


def test_flags_apply_even_when_a_prepared_record_turns_out_to_be_stored(db):
    write_batch(db, CORPUS[:2], prepare(CORPUS[:2], EMBEDDER), source_conflict)
    retracted = [dataclasses.replace(CORPUS[0], retracted=True), CORPUS[1]]
    result = write_batch(db, retracted, prepare(retracted, EMBEDDER), source_conflict)  # planned as if nothing were stored
    assert (result.documents_added, result.status_changes) == (0, 1)
    assert _counts(db)["searchable"] == 1


def test_a_new_document_that_arrives_retracted_is_never_searchable(db):
    _ingest(db, [_record("r1", "Retracted finding about storage.", retracted=True)])
    assert _counts(db)["searchable"] == 0


def test_a_failing_write_leaves_nothing_behind(db):
    prepared = prepare(CORPUS[:5], EMBEDDER)
    prepared.documents[4].chunks[0] = dataclasses.replace(
        prepared.documents[4].chunks[0],
        chunk=dataclasses.replace(prepared.documents[4].chunks[0].chunk, text="tampered text"),
    )
    with pytest.raises(psycopg.errors.CheckViolation):
        write_batch(db, CORPUS[:5], prepared, source_conflict)
    assert _counts(db) == {"documents": 0, "chunks": 0, "embeddings": 0, "searchable": 0}


def test_database_rejects_chunks_whose_offsets_do_not_match(db):
    _ingest(db, CORPUS[:1])
    with db.connection() as conn, pytest.raises(psycopg.errors.CheckViolation, match="does not match its document"):
        conn.execute(
            """INSERT INTO forum.chunks (chunk_key, document_id, ordinal, start_char, end_char, heading, body)
               SELECT 'forged', document_id, 9, 0, 5, '', 'XXXXX' FROM forum.documents LIMIT 1"""
        )


def test_lexical_columns_are_computed_by_the_database(db):
    _ingest(db, [_record("lx", "Running dogs ran quickly.")])
    with db.connection() as conn:
        row = conn.execute("SELECT lexemes::text AS lexemes, token_count FROM forum.chunks").fetchone()
        # A client cannot forge the lexical data: the trigger recomputes it from the text.
        conn.execute("UPDATE forum.chunks SET lexemes = 'forged'::tsvector, token_count = 99")
        after = conn.execute("SELECT lexemes::text AS lexemes, token_count FROM forum.chunks").fetchone()
    assert row == after
    assert row["lexemes"] == "'dog':4 'lx':2 'quick':6 'ran':5 'run':3 'titl':1" and row["token_count"] == 6


def test_the_analyzer_is_skipped_only_inside_the_staged_insert(db):
    """sql/072: the writer's chunks get their lexical columns from forum.insert_staged_chunks(), which computes
    them with a parallel query; the trigger takes them from that function alone. A client that raises the
    function's flag itself is not the table's owner, and is recomputed; nothing stays staged or flagged."""
    _ingest(db, [_record("lx", "Running dogs ran quickly.")])
    role = f"atlas_client_{uuid.uuid4().hex[:12]}"
    try:
        with db.connection() as conn:
            assert conn.execute("SELECT count(*) AS n FROM forum.chunk_stage").fetchone()["n"] == 0
            assert conn.execute("SELECT current_setting('forum.staged_lexemes', true) AS flag").fetchone()["flag"] != "on"
            conn.execute(f"CREATE ROLE {role}")
            conn.execute(f"GRANT USAGE ON SCHEMA forum TO {role}")
            conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA forum TO {role}")
            conn.execute(f"SET ROLE {role}")
            conn.execute("SET forum.staged_lexemes = 'on'")
            conn.execute("UPDATE forum.chunks SET lexemes = 'forged'::tsvector, token_count = 99")
            conn.execute("RESET ROLE")
            row = conn.execute("SELECT lexemes::text AS lexemes, token_count FROM forum.chunks").fetchone()
            conn.commit()
    finally:
        with db.connection() as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    assert row == {"lexemes": "'dog':4 'lx':2 'quick':6 'ran':5 'run':3 'titl':1", "token_count": 6}


def test_a_chunk_failing_its_checks_in_the_staged_insert_leaves_nothing_staged(db):
    prepared = prepare(CORPUS[:2], EMBEDDER)
    prepared.documents[1].chunks[0] = dataclasses.replace(
        prepared.documents[1].chunks[0], chunk=dataclasses.replace(prepared.documents[1].chunks[0].chunk, start=1))
    with pytest.raises(psycopg.errors.CheckViolation):
        write_batch(db, CORPUS[:2], prepared, source_conflict)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.chunk_stage").fetchone()["n"] == 0
    assert _counts(db)["chunks"] == 0


def test_rows_another_transaction_left_staged_are_never_inserted(db):
    _ingest(db, CORPUS[:1])
    with db.transaction() as conn:   # staged and committed, never inserted by the function
        conn.execute("""INSERT INTO forum.chunk_stage (seq, chunk_key, document_id, ordinal, start_char, end_char,
                                                        heading, body, searchable)
                        SELECT 1, 'left-behind', document_id, 7, 0, 4, '', 'Grid', true FROM forum.documents""")
    _ingest(db, CORPUS[1:3])
    with db.connection() as conn:
        keys = [r["chunk_key"] for r in conn.execute("SELECT chunk_key FROM forum.chunks")]
    assert len(keys) == 3 and "left-behind" not in keys


def test_audit_log_is_append_only_and_tamper_evident(db):
    with db.transaction() as conn:
        for i in range(3):
            record_event(conn, "TEST_EVENT", {"i": i})
    with db.connection() as conn:
        assert verify_events(conn) == ([], 3)
        for statement in ("UPDATE forum.events SET payload = '{}'", "DELETE FROM forum.events", "TRUNCATE forum.events"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                conn.execute(statement)
            conn.rollback()
        # Someone with the power to bypass triggers edits a row: verification finds it.
        conn.execute("ALTER TABLE forum.events DISABLE TRIGGER events_append_only")
        conn.execute("""UPDATE forum.events SET payload = '{"i": 42}' WHERE event_id = 2""")
        conn.execute("ALTER TABLE forum.events ENABLE TRIGGER events_append_only")
        conn.commit()
        problems, _ = verify_events(conn)
    assert [(p["event_id"], p["problem"]) for p in problems] == [(2, "row_hash does not match the row content")]


@pytest.mark.parametrize("word", ["Naïve café — ε{i} ∑ résumé.", "Plain cafe - e{i} sum resume."],
                         ids=["multibyte", "ascii"])
def test_offset_check_across_its_255_character_blocks(db, word):
    """Offsets are checked in linear time: a multibyte text block by block (sql/035), an ASCII one by byte
    slices (sql/070). Chunks that cross block boundaries pass; a chunk shifted by one character, or reaching
    past the end, is refused."""
    text = " ".join(word.format(i=i) + " " for i in range(120))   # ~3,400 characters
    record = _record("mb", text)
    prepared = prepare([record], EMBEDDER, ChunkingOptions(max_chars=300, overlap_chars=60))
    assert len(prepared.documents[0].chunks) > 10
    assert write_batch(db, [record], prepared, source_conflict).chunks_added == len(prepared.documents[0].chunks)

    shifted = _record("mb2", text)
    one_off = {"start": 256, "end": 256 + 40, "text": text[255:295]}
    past_the_end = {"start": len(text) - 5, "end": len(text) + 5, "text": text[-5:] + "XXXXX"}
    for change in (one_off, past_the_end):
        bad = prepare([shifted], EMBEDDER, ChunkingOptions(max_chars=300, overlap_chars=60))
        first = bad.documents[0].chunks[0]
        bad.documents[0].chunks[0] = dataclasses.replace(first, chunk=dataclasses.replace(first.chunk, **change))
        with pytest.raises(psycopg.errors.CheckViolation, match="does not match its document at its offsets"):
            write_batch(db, [shifted], bad, source_conflict)


def test_hnsw_build_memory_grows_with_the_graph_up_to_the_configured_cap():
    assert hnsw_build_memory_mb(0, 384) == 64
    assert hnsw_build_memory_mb(100_000, 384) == 552
    # 1M vectors want ~4.9 GB; the default cap (a small managed server's) grants 1 GB, a raised one all of it.
    assert hnsw_build_memory_mb(1_000_000, 384) == 1024
    cap = settings_from_env({"ATLAS_HNSW_BUILD_MEMORY_MB": "6144"}).hnsw_build_memory_cap_mb
    assert hnsw_build_memory_mb(1_000_000, 384, cap) == 4946
    assert settings_from_env({}).hnsw_build_memory_cap_mb == 1024
