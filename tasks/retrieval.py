"""The retrieval stages as Prefect tasks, so a flow's DAG shows BM25, dense, fusion and rerank.

Inside a flow:

    result = retrieve(TaskRetriever(stored_retriever(settings)), question, options)

`retrieve` is the one pipeline (`forum_atlas.retrieval.pipeline`); each task here only runs the
matching stage of a `Retriever` (`forum_atlas.retrieval.retriever`) on the stored corpus
(`forum_atlas.store.retrieval`). BM25 and dense are submitted together, so they run concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from forum_atlas.config import Settings
from forum_atlas.retrieval.model import Request, RetrievalOptions, RetrievalResult, StageResult
from forum_atlas.retrieval.pipeline import retrieve
from forum_atlas.retrieval.retriever import Retriever
from forum_atlas.store.db import shared_database
from forum_atlas.store.retrieval import StoredCorpus
from forum_atlas.tasks import untraversed

retrieval_task = task(cache_policy=NO_CACHE, persist_result=False)


@retrieval_task(name="check-request")
def check_request(retriever: Retriever, query: str, options: RetrievalOptions) -> Request:
    """Clean the query and check the options (raises QueryError with the fix)."""
    return retriever.check(query, options)


@retrieval_task(name="bm25")
def bm25_stage(retriever: Retriever, request: Request) -> StageResult:
    return retriever.bm25(request)


@retrieval_task(name="dense")
def dense_stage(retriever: Retriever, request: Request) -> StageResult:
    return retriever.dense(request)


@retrieval_task(name="fusion")
def fuse_stage(retriever: Retriever, lexical: StageResult, semantic: StageResult, request: Request) -> StageResult:
    return retriever.fuse(lexical, semantic, request)


@retrieval_task(name="rerank")
def rerank_stage(retriever: Retriever, request: Request, lexical: StageResult, semantic: StageResult,
                 fused: StageResult) -> RetrievalResult:
    """Rerank the fused candidates (fused order, marked degraded, if the reranker fails)."""
    return retriever.rerank(request, lexical, semantic, fused)


@dataclass(frozen=True)
class TaskRetriever:
    """A `Retriever` whose stages run as the tasks above."""
    retriever: Retriever

    def check(self, query: str, options: RetrievalOptions) -> Request:
        return check_request(*untraversed(self.retriever, query, options))

    def legs(self, request: Request) -> tuple[StageResult, StageResult]:
        lexical = bm25_stage.submit(*untraversed(self.retriever, request))
        semantic = dense_stage.submit(*untraversed(self.retriever, request))
        return lexical.result(), semantic.result()

    def fuse(self, lexical: StageResult, semantic: StageResult, request: Request) -> StageResult:
        return fuse_stage(*untraversed(self.retriever, lexical, semantic, request))

    def rerank(self, request: Request, lexical: StageResult, semantic: StageResult,
               fused: StageResult) -> RetrievalResult:
        return rerank_stage(*untraversed(self.retriever, request, lexical, semantic, fused))


def stored_retriever(settings: Settings) -> Retriever:
    """The pipeline's stages on the configured database, query embedder and reranker."""
    return Retriever.from_settings(settings, StoredCorpus(shared_database(settings)))


def retrieve_in_flow(settings: Settings, query: str, options: RetrievalOptions = RetrievalOptions()) -> RetrievalResult:
    """The pipeline with every stage a task run (call inside a flow)."""
    return retrieve(TaskRetriever(stored_retriever(settings)), query, options)


def retrieve_plain(settings: Settings, query: str, options: RetrievalOptions = RetrievalOptions()) -> RetrievalResult:
    """The same pipeline as plain calls: no task runs (usable from inside any task, or no flow)."""
    return retrieve(stored_retriever(settings), query, options)


def search_passages(settings: Settings, query: str, *, top_k: int = 5, **options: Any) -> list[dict[str, Any]]:
    """Final passages as dicts (chunk_id, document_id, title, body, url, score, rank, start_char,
    end_char, ranks per stage), best first — for callers that want passages, not a trace (forecast
    driver evidence). Plain calls, so it is usable from inside any task."""
    result = retrieve_plain(settings, query, RetrievalOptions(top_k=top_k, **options))
    final = result.stages[-1] if result.stages else None
    ranks = final.ranks() if final else {}
    scores = {c.chunk_id: c.score for c in final.candidates} if final else {}
    return [{**source.as_dict(), "body": source.context, "rank": ranks.get(source.chunk.chunk_id),
             "score": scores.get(source.chunk.chunk_id)} for source in result.sources]
