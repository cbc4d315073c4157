"""The retrieval stages as Prefect tasks compose in a flow and give the same result as the plain calls."""

from prefect import flow

from forum_atlas.retrieval.model import RetrievalOptions
from forum_atlas.retrieval.pipeline import retrieve
from forum_atlas.tasks import retrieval as retrieval_tasks
from tests.support.corpus import ingest, record


def test_tasks_compose_into_a_flow(prefect_env, db, settings):
    ingest(db, [record("a", "Insulin resistance in skeletal muscle.", title="Muscle"),
                record("b", "Insulin pumps.", title="Pumps"), record("c", "Solar output.", title="Solar")])
    options = RetrievalOptions(top_k=2, dense_threshold=0.0)

    @flow
    def retrieve_flow(query: str):
        return retrieval_tasks.retrieve_in_flow(settings, query, options)

    result = retrieve_flow("insulin resistance")
    plain = retrieve(retrieval_tasks.stored_retriever(settings), "insulin resistance", options)
    assert [s.stage for s in result.stages] == ["bm25", "dense", "fusion", "rerank"]
    assert [s.chunk.chunk_id for s in result.sources] == [s.chunk.chunk_id for s in plain.sources]
    assert result.latency_ms["total"] > 0 and set(result.latency_ms) >= {"bm25", "dense", "fusion_and_rerank"}
    passages = retrieval_tasks.search_passages(settings, "insulin resistance", top_k=2)
    assert [p["chunk_id"] for p in passages] == [s.chunk.chunk_id for s in plain.sources]
    assert passages[0]["rank"] == 1 and passages[0]["body"].startswith("Insulin resistance")
    assert {"document_id", "title", "start_char", "end_char", "ranks"} <= set(passages[0])
