"""bench.retrieval_speed's resumable corpus build and bench.managed_rehearsal's provisioning, on real
PostgreSQL (the timings themselves are the benchmark's business, not the tests')."""

import json

import psycopg
import pytest

from bench import managed_rehearsal, retrieval_speed
from bench.synthetic_corpus import SyntheticCorpus


def _fields(records):
    return [(r.external_id, r.text, r.sector, r.published_at) for batch in records for r in batch]


def test_a_range_of_the_corpus_is_the_same_as_in_a_full_pass():
    corpus = SyntheticCorpus(700)
    assert _fields(corpus.records(100, start=250, stop=600)) == _fields(corpus.records(100))[250:600]
    assert _fields(corpus.records(100, start=650)) == _fields(corpus.records(100))[650:]


def test_a_killed_load_resumes_after_its_last_batch_and_loads_the_tail_incrementally(database_url, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setattr(retrieval_speed, "BATCH", 50)
    monkeypatch.setattr(retrieval_speed, "INCREMENTAL_FROM", 300)
    monkeypatch.setattr(retrieval_speed, "INCREMENTAL_TAIL", 100)
    state_path = tmp_path / "state.json"
    tracked = retrieval_speed._tracked

    def killed_after_three_batches(batches, phase, save):
        for i, batch in enumerate(tracked(batches, phase, save)):
            if i == 3:
                raise KeyboardInterrupt   # as a stop would: batch 4 is never written
            yield batch

    monkeypatch.setattr(retrieval_speed, "_tracked", killed_after_three_batches)
    with pytest.raises(KeyboardInterrupt):
        retrieval_speed.load_corpus(database_url, 300, state_path)
    monkeypatch.setattr(retrieval_speed, "_tracked", tracked)
    assert json.loads(state_path.read_text())["phases"]["bulk"]["documents"] == 150

    state = retrieval_speed.load_corpus(database_url, 300, state_path)

    assert state["complete"] and state["rewrite_check"] == {**state["rewrite_check"], "at": 150, "documents_added": 0}
    bulk, incremental = state["phases"]["bulk"], state["phases"]["incremental"]
    assert (bulk["start"], bulk["documents"], bulk["done"]) == (0, 200, True)
    assert (incremental["start"], incremental["documents"], incremental["done"]) == (200, 100, True)
    assert incremental["floor_s"] > 0 and "floor_s" not in bulk
    with psycopg.connect(database_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT external_id FROM forum.documents ORDER BY document_id")]
        assert ids == [f"syn-{i}" for i in range(300)]
        assert conn.execute("SELECT chunk_count FROM forum.bm25_stats").fetchone()[0] == 300
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw%'").fetchone()[0] == 1
    # Complete: another resume adds nothing.
    assert retrieval_speed.load_corpus(database_url, 300, state_path)["phases"]["incremental"]["documents"] == 100


def test_a_stored_corpus_that_is_not_a_prefix_is_refused(database_url, tmp_path):
    from bench.corpus_loading import WHOLE_DOCUMENT
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.ingestion.preparation import prepare
    from forum_atlas.ingestion.records import source_conflict
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import write_batch

    retrieval_speed.load_corpus(database_url, 60, tmp_path / "state.json")
    with Database.open(Settings(database_url=database_url)) as db:
        stray = next(SyntheticCorpus(1000).records(10, start=900, stop=901))   # syn-900: a gap after syn-59
        write_batch(db, stray, prepare(stray, make_embedder("hashed"), WHOLE_DOCUMENT), source_conflict)
        with pytest.raises(RuntimeError, match="prefix"):
            retrieval_speed.stored_documents(db)


def test_the_managed_role_migrates_and_is_told_why_there_is_no_kernel(pg_server_url, monkeypatch):
    from forum_atlas.config import Settings
    from forum_atlas.store.db import Database

    role_url = managed_rehearsal.provision(pg_server_url, fresh=True, database=f"managed_{id(monkeypatch)}")
    assert not any(managed_rehearsal.role_rights(role_url).values())
    with Database.open(Settings(database_url=role_url, bm25_kernel=False)) as db:
        with db.connection() as conn:
            assert conn.execute("SELECT forum.bm25_engine() AS e").fetchone()["e"] == "PL/pgSQL MaxScore"
    monkeypatch.delenv("ATLAS_BM25_KERNEL", raising=False)
    assert "is not a superuser" in managed_rehearsal.kernel_status(role_url, kernel_off=False)
    assert "ATLAS_BM25_KERNEL=off" in managed_rehearsal.kernel_status(role_url, kernel_off=True)
