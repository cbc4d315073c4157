"""Issue 10 (4): a source's metadata changes only through an explicit, recorded update — not because an
input row reused its name with other values."""

import dataclasses

import psycopg
import pytest

from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import Record, SourceConflictError, SourceInfo, source_conflict
from forum_atlas.store.db import verify_audit
from forum_atlas.store.documents import list_sources, update_source, write_batch

SOURCE = SourceInfo("Gazette", 5, 4, "OGL-3.0", "https://gazette.example", "energy")
EMBEDDER = HashedEmbedder(dim=64)


def _record(ext_id: str, source: SourceInfo = SOURCE, line: int = 1) -> Record:
    return Record(external_id=ext_id, title=f"Note {ext_id}", text=f"Grid demand rose by {ext_id} percent.",
                  source=source, metadata={"origin": f"in.jsonl:{line}"})


def _stored(db):
    [row] = [r for r in list_sources(db) if r["name"] == "Gazette"]
    return row


def _documents(db):
    with db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM forum.documents").fetchone()["n"]


def test_a_row_with_other_metadata_for_a_known_source_is_refused_and_writes_nothing(db):
    write_batch(db, [_record("1")], prepare([_record("1")], EMBEDDER), source_conflict)
    demoted = dataclasses.replace(SOURCE, importance=1, licence="proprietary")
    records = [_record("2", line=1), _record("3", demoted, line=2)]
    with pytest.raises(SourceConflictError) as caught:
        write_batch(db, records, prepare(records, EMBEDDER), source_conflict)
    message = str(caught.value)
    assert message.startswith("in.jsonl:2: source 'Gazette' is stored with other metadata")
    assert "importance 1 (stored: 5)" in message and "licence 'proprietary' (stored: 'OGL-3.0')" in message
    assert "atlas sources update 'Gazette' --importance 1 --licence 'proprietary'" in message
    assert (_stored(db)["importance"], _stored(db)["licence"], _documents(db)) == (5, "OGL-3.0", 1)


def test_two_rows_of_one_batch_that_disagree_about_a_new_source_are_refused(db):
    records = [_record("1"), _record("2", dataclasses.replace(SOURCE, sector="health"), line=2)]
    with pytest.raises(SourceConflictError, match=r"in.jsonl:2: .*sector 'health' \(stored: 'energy'\)"):
        write_batch(db, records, prepare(records, EMBEDDER), source_conflict)
    assert _documents(db) == 0 and list_sources(db) == []


def test_the_database_refuses_an_implicit_update(db):
    write_batch(db, [_record("1")], prepare([_record("1")], EMBEDDER), source_conflict)
    with db.connection() as conn, pytest.raises(psycopg.errors.CheckViolation, match="explicit, recorded update"):
        conn.execute("UPDATE forum.sources SET importance = 1 WHERE name = 'Gazette'")


def test_an_explicit_update_changes_the_source_and_is_recorded(db):
    write_batch(db, [_record("1")], prepare([_record("1")], EMBEDDER), source_conflict)
    before, after = update_source(db, "Gazette", {"importance": 3}, "downgraded after the 2026 review")
    assert (before.importance, after.importance, _stored(db)["importance"]) == (5, 3, 3)
    with db.connection() as conn:
        event = conn.execute("SELECT payload FROM forum.events WHERE kind = 'SOURCE_UPDATED'").fetchone()["payload"]
        assert verify_audit(conn).intact
    assert event["reason"] == "downgraded after the 2026 review"
    assert (event["before"]["importance"], event["after"]["importance"]) == (5, 3)
    # input that carries the old value is now the one that disagrees
    with pytest.raises(SourceConflictError, match=r"importance 5 \(stored: 3\)"):
        write_batch(db, [_record("2")], prepare([_record("2")], EMBEDDER), source_conflict)


@pytest.mark.parametrize(("changes", "reason", "message"), [
    ({}, "r", "nothing to update"), ({"name": "x"}, "r", "unknown fields"), ({"importance": 2}, " ", "needs a reason")])
def test_an_update_needs_fields_and_a_reason(db, changes, reason, message):
    write_batch(db, [_record("1")], prepare([_record("1")], EMBEDDER), source_conflict)
    with pytest.raises(ValueError, match=message):
        update_source(db, "Gazette", changes, reason)


def test_a_row_that_omits_the_url_or_sector_does_not_contradict_the_stored_source(db):
    write_batch(db, [_record("1")], prepare([_record("1")], EMBEDDER), source_conflict)
    silent = dataclasses.replace(SOURCE, url=None, sector=None)
    assert write_batch(db, [_record("2", silent)], prepare([_record("2", silent)], EMBEDDER), source_conflict).documents_added == 1
    assert (_stored(db)["url"], _stored(db)["sector"]) == ("https://gazette.example", "energy")
