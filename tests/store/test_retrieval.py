"""RET-2…6 against a real database: dense search with filters, the hybrid pipeline, its trace and
bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from bench.synthetic_corpus import SyntheticCorpus
from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.rerank.none import NoReranker
from forum_atlas.retrieval.model import RetrievalOptions
from forum_atlas.retrieval import stages
from forum_atlas.retrieval.pipeline import retrieve
from forum_atlas.retrieval.query import QueryError
from forum_atlas.retrieval.retriever import Retriever
from forum_atlas.store import retrieval
from forum_atlas.store.db import Database
from forum_atlas.store.documents import ensure_embedding_index, register_embedder
from tests.conftest import _fresh_database
from tests.support.corpus import TEST_SOURCE, ingest, record

EMBEDDER = HashedEmbedder()
SIZE = 600


def hybrid(db, query, options=RetrievalOptions()):
    """The one retrieval pipeline, its stages as plain calls on this database."""
    return retrieve(Retriever(retrieval.StoredCorpus(db), EMBEDDER, NoReranker()), query, options)


@pytest.fixture(scope="module")
def corpus_db(pg_server_url, tmp_path_factory):
    """600 synthetic documents in five sectors (one holds ~1 %), HNSW index built."""
    from forum_atlas.config import Settings

    db = Database.open(Settings(database_url=_fresh_database(pg_server_url), data_dir=tmp_path_factory.mktemp("ret")))
    for batch in SyntheticCorpus(SIZE, seed=3).records(300):
        ingest(db, batch, embedder=EMBEDDER)
    model = register_embedder(db, EMBEDDER.name, EMBEDDER.engine, EMBEDDER.version, EMBEDDER.dim)
    ensure_embedding_index(db, model["model_id"])
    yield db
    db.close()


def facts(conn) -> dict[int, dict]:
    return {r["chunk_id"]: r for r in conn.execute(
        "SELECT c.chunk_id, d.sector, d.published_at FROM forum.chunks c JOIN forum.documents d USING (document_id)")}


def exact_ids(conn, text, options):
    return [c.chunk_id for c in stages.dense(EMBEDDER, text, options, retrieval.StoredVectors(conn), exact=True).candidates]


QUERIES = SyntheticCorpus(SIZE, seed=3).queries(5)


@pytest.mark.parametrize("sectors, days", [(None, None), (("finance",), None), (("climate",), None),
                                           (("health", "energy"), 900), (None, 200)])
@pytest.mark.parametrize("exact_filter_limit", [retrieval.EXACT_FILTER_LIMIT, 0], ids=["exact-if-selective", "hnsw"])
def test_dense_filters_return_exactly_the_matching_rows(corpus_db, sectors, days, exact_filter_limit, monkeypatch):
    monkeypatch.setattr(retrieval, "EXACT_FILTER_LIMIT", exact_filter_limit)  # 0: always the HNSW iterative scan
    after = datetime(2015, 1, 1, tzinfo=timezone.utc) + timedelta(days=days) if days else None
    options = RetrievalOptions(dense_k=10, dense_threshold=-1.0, sectors=sectors, published_after=after)
    with corpus_db.connection() as conn:
        info = facts(conn)
        eligible = [c for c, f in info.items() if (sectors is None or f["sector"] in sectors)
                    and (after is None or f["published_at"] >= after)]
        for text in QUERIES:
            got = stages.dense(EMBEDDER, text, options, retrieval.StoredVectors(conn))
            ids = [c.chunk_id for c in got.candidates]
            assert len(ids) == min(10, len(eligible))          # a full top-k, however selective
            assert set(ids) <= set(eligible)
            if exact_filter_limit or len(eligible) <= 10:
                assert ids == exact_ids(conn, text, options)   # and the right rows, in order
            # (HNSW itself is approximate: its recall is measured in bench/retrieval_quality.py)
            assert [c.rank for c in got.candidates] == list(range(1, len(ids) + 1))
            sims = [c.score for c in got.candidates]
            assert sims == sorted(sims, reverse=True)


def test_dense_threshold_drops_weak_matches(corpus_db):
    with corpus_db.connection() as conn:
        loose = stages.dense(EMBEDDER, QUERIES[0], RetrievalOptions(dense_threshold=-1.0), retrieval.StoredVectors(conn))
        strict = stages.dense(EMBEDDER, QUERIES[0], RetrievalOptions(), retrieval.StoredVectors(conn))
        assert len(loose.candidates) == 20
        assert all(c.score >= 0.45 for c in strict.candidates)
        assert [c.chunk_id for c in strict.candidates] == [c.chunk_id for c in loose.candidates if c.score >= 0.45]
        assert strict.parameters["threshold"] == 0.45 and strict.parameters["k"] == 20


def test_hybrid_trace(corpus_db):
    result = hybrid(corpus_db, QUERIES[1], RetrievalOptions(dense_threshold=0.0))
    assert [s.stage for s in result.stages] == ["bm25", "dense", "fusion", "rerank"]
    bm25, dense, fusion, rerank = result.stages
    assert len(result.sources) == 5 and result.explanation == ""
    assert bm25.engine == "postgresql-bm25okapi" and dense.engine == "pgvector-hnsw-cosine"
    assert fusion.parameters["k"] == 50 and rerank.engine == "none"
    for stage in result.stages:
        assert stage.outcome.kind == "ok"
        assert [c.rank for c in stage.candidates] == list(range(1, len(stage.candidates) + 1))
    fused_ranks = fusion.ranks()
    for position, source in enumerate(result.sources, start=1):
        assert source.ranks["rerank"] == position
        assert source.ranks["fusion"] == fused_ranks[source.chunk.chunk_id]
        assert source.ranks["bm25"] is not None or source.ranks["dense"] is not None
        assert len(source.context) <= 4000
    trace = json.loads(json.dumps(result.as_dict(), default=str))
    assert trace["stages"][0]["candidates"][0]["rank"] == 1 and trace["degraded_stages"] == []


def test_retracted_documents_leave_both_legs(db):
    ingest(db, [record("a", "Statins lower cholesterol in adults.", sector="health"),
                record("b", "Statins and cholesterol: a retracted trial.", sector="health")])
    options = RetrievalOptions(dense_threshold=0.0)
    before = hybrid(db, "statins cholesterol", options)
    assert len(before.sources) == 2
    ingest(db, [record("b", "Statins and cholesterol: a retracted trial.", sector="health", retracted=True)])
    after = hybrid(db, "statins cholesterol", options)
    assert [s.chunk.title for s in after.sources] == [""] and len(after.sources) == 1
    for stage in after.stages[:2]:
        assert len(stage.candidates) == 1


PAPER = ("Insulin resistance in skeletal muscle rises with age. Older adults lose muscle mass each decade. "
         "Resistance training restores insulin sensitivity in older muscle.")


def test_identical_content_from_two_sources_is_one_hit_naming_both(db):
    """The same paper ingested twice (the demo's copy, the user's copy): one hit, the other copy named; a copy
    that is retracted is not named; with one_per_document off no passage is listed twice either."""
    demo = record("paper.pdf", PAPER, title="Muscle insulin", sector="health")
    mine = replace(record("library/paper.pdf", PAPER, title="Muscle insulin", sector="health"),
                   source=replace(TEST_SOURCE, name="my library"))
    stale = replace(record("old/paper.pdf", PAPER, title="Muscle insulin", sector="health", retracted=True),
                    source=replace(TEST_SOURCE, name="old library"))
    ingest(db, [demo, mine, stale, record("pumps", "Insulin pumps for type 1 diabetes.", title="Pumps", sector="health")],
           options=ChunkingOptions(max_chars=80, overlap_chars=0))
    options = RetrievalOptions(dense_threshold=0.0, top_k=10)
    result = hybrid(db, "insulin resistance in older muscle", options)
    titles = [s.chunk.title for s in result.sources]
    assert titles.count("Muscle insulin") == 1 and "Pumps" in titles
    paper = next(s for s in result.sources if s.chunk.title == "Muscle insulin")
    other = "my library" if paper.chunk.source_name == "test source" else "test source"
    assert [c.source_name for c in paper.chunk.also_in] == [other]
    assert paper.as_dict()["also_in"][0]["source_name"] == other
    assert result.stage("rerank").parameters["identical_copies_merged"] >= 1

    passages = hybrid(db, "insulin resistance in older muscle", replace(options, one_per_document=False)).sources
    places = [(s.chunk.title, s.chunk.start_char) for s in passages]
    assert len(places) == len(set(places)) and len([t for t, _ in places if t == "Muscle insulin"]) == 3


@pytest.mark.parametrize("query, message", [
    ("", "empty"), ("   \n\t ", "empty"), ("x" * 100_000, "limit is 4,000"), ("nul\x00byte", "NUL")])
def test_bad_queries_are_clear_errors(db, query, message):
    ingest(db, [record("a", "insulin")])
    with pytest.raises(QueryError, match=message):
        hybrid(db, query)


def test_bad_filters_and_metacharacters(db):
    ingest(db, [record("a", "O'Brien's insulin study; \"quoted\" -- 100% done", sector="health"),
                record("b", "insulin pumps", sector="energy")])
    hostile = "'; DROP TABLE forum.chunks; -- \\ % _ \" $$"
    result = hybrid(db, hostile)
    assert result.sources == [] and "no source matched" in result.explanation
    quoted = hybrid(db, "O'Brien's \"insulin\" 100%", RetrievalOptions(dense_threshold=0.0))
    assert quoted.sources[0].chunk.body.startswith("O'Brien")
    with pytest.raises(QueryError, match="unknown sector.*DROP TABLE.*energy, health"):
        hybrid(db, "insulin", RetrievalOptions(sectors=(hostile,)))
    with pytest.raises(QueryError, match=r"unknown sector\(s\) 'defence'; the corpus has: energy, health"):
        hybrid(db, "insulin", RetrievalOptions(sectors=("defence",)))
    future = datetime.now(timezone.utc) + timedelta(days=365)
    empty = hybrid(db, "insulin", RetrievalOptions(published_after=future))
    assert empty.sources == [] and "future" in empty.explanation
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.chunks").fetchone()["n"] == 2


def test_stop_words_only_and_unknown_words_explain_the_empty_result(db):
    ingest(db, [record("a", "insulin resistance")])
    result = hybrid(db, "the of and")
    assert result.sources == []
    assert "only stop words" in result.stage("bm25").note
    assert result.stage("dense").candidates == [] and result.stage("dense").note
    assert "only stop words" in result.explanation


def test_known_sectors_are_those_of_current_documents(db):
    ingest(db, [record("a", "insulin first version", sector="finance"), record("b", "statins", sector="health")])
    ingest(db, [record("a", "insulin second version", sector="energy")])  # supersedes a's finance version
    with db.connection() as conn:
        expected = [r["sector"] for r in conn.execute(
            "SELECT DISTINCT sector FROM forum.documents WHERE is_current ORDER BY sector")]
        assert retrieval.known_sectors(conn) == expected == ["energy", "health"]
