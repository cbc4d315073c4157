"""Retrieval as Prefect tasks, one per stage, so a flow's DAG shows BM25, dense, fusion and rerank.

Inside a flow:

    request = check_request(settings, question, options)
    lexical = bm25_stage.submit(settings, request)       # the two legs can run concurrently
    semantic = dense_stage.submit(settings, request)
    fused = fuse_stage(lexical, semantic, request)
    result = rerank_stage(settings, request, lexical, semantic, fused)   # RetrievalResult

`retrieve(settings, question, options)` runs that sequence. `search_passages` is the plain-function
form (no task run) for callers that only need passages, e.g. driver evidence in the forecast flow.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from forum_atlas.config import Settings
from forum_atlas.embeddings import embedder_for
from forum_atlas.rerank import Reranker, make_reranker
from forum_atlas.retrieval import stages
from forum_atlas.retrieval.model import RetrievalOptions, RetrievalResult, StageResult
from forum_atlas.store import retrieval
from forum_atlas.store.db import shared_database

retrieval_task = task(cache_policy=NO_CACHE, persist_result=False)
_rerankers: dict[tuple, Reranker] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Request:
    query: str
    options: RetrievalOptions
    empty_reason: str = ""


def reranker(settings: Settings) -> Reranker:
    """One reranker per configuration and process (a local model is slow to load)."""
    key = (settings.reranker, str(settings.reranker_model_dir))
    with _lock:
        if key not in _rerankers:
            _rerankers[key] = make_reranker(settings.reranker, model_dir=settings.reranker_model_dir)
        return _rerankers[key]


@retrieval_task
def check_request(settings: Settings, query: str, options: RetrievalOptions = RetrievalOptions()) -> Request:
    """Clean the query and check the options (raises QueryError with the fix)."""
    with shared_database(settings).connection() as conn:
        return Request(*retrieval.prepare_request(conn, query, options))


@retrieval_task
def bm25_stage(settings: Settings, request: Request) -> StageResult:
    with shared_database(settings).connection() as conn:
        return retrieval.bm25(conn, request.query, request.options)


@retrieval_task
def dense_stage(settings: Settings, request: Request) -> StageResult:
    with shared_database(settings).connection() as conn:
        return retrieval.dense(conn, embedder_for(settings), request.query, request.options)


@retrieval_task
def fuse_stage(lexical: StageResult, semantic: StageResult, request: Request) -> StageResult:
    return stages.fuse(lexical, semantic, request.options)


@retrieval_task
def rerank_stage(settings: Settings, request: Request, lexical: StageResult, semantic: StageResult,
                 fused: StageResult) -> RetrievalResult:
    """Rerank the fused candidates (fused order, marked degraded, if the reranker fails) and return
    the traced result."""
    with shared_database(settings).connection() as conn:
        chunks = retrieval.candidate_chunks(conn, fused, request.options)
    return retrieval.finish(request.query, request.options, lexical, semantic, fused, chunks, reranker(settings))


def retrieve(settings: Settings, query: str, options: RetrievalOptions = RetrievalOptions()) -> RetrievalResult:
    """The four stages as tasks; call inside a flow."""
    request = check_request(settings, query, options)
    if request.empty_reason:
        return RetrievalResult(query=request.query, options=request.options, stages=[], sources=[],
                               explanation=request.empty_reason)
    lexical = bm25_stage.submit(settings, request)
    semantic = dense_stage.submit(settings, request)
    fused = fuse_stage(lexical, semantic, request)
    return rerank_stage(settings, request, lexical.result(), semantic.result(), fused)


def search_passages(settings: Settings, query: str, *, top_k: int = 5, **options: Any) -> list[dict[str, Any]]:
    """Final passages as dicts (chunk_id, document_id, title, body, url, score, rank, start_char,
    end_char, ranks per stage), best first. No task run: usable from any task or script."""
    result = retrieval.hybrid_search(shared_database(settings), query, embedder_for(settings),
                                     RetrievalOptions(top_k=top_k, **options), reranker(settings))
    final = result.stages[-1].ranks() if result.stages else {}
    scores = {c.chunk_id: c.score for c in result.stages[-1].candidates} if result.stages else {}
    return [{**source.as_dict(), "body": source.context, "rank": final.get(source.chunk.chunk_id),
             "score": scores.get(source.chunk.chunk_id)} for source in result.sources]
