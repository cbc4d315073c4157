"""The retrieval pipeline (RET-1…6), written once: check → BM25 ∥ dense → fusion → rerank.

Search, forecast evidence and deliberation all call `retrieve`. What runs each stage is passed in:
`forum_atlas.retrieval.retriever.Retriever` runs them as plain calls on the stored corpus (the CLI's
`atlas search`, benchmarks), `forum_atlas.tasks.retrieval.TaskRetriever` runs the same calls as
Prefect tasks so a flow's DAG shows BM25, dense, fusion and rerank.
"""

from __future__ import annotations

import time
from typing import Protocol

from forum_atlas.retrieval.model import Request, RetrievalOptions, RetrievalResult, StageResult


class RetrievalStages(Protocol):
    def check(self, query: str, options: RetrievalOptions) -> Request: ...

    def legs(self, request: Request) -> tuple[StageResult, StageResult]:
        """(BM25, dense) — independent, so an implementation may run them concurrently."""
        ...

    def fuse(self, lexical: StageResult, semantic: StageResult, request: Request) -> StageResult: ...

    def rerank(self, request: Request, lexical: StageResult, semantic: StageResult,
               fused: StageResult) -> RetrievalResult: ...


def retrieve(stages: RetrievalStages, query: str, options: RetrievalOptions = RetrievalOptions()) -> RetrievalResult:
    """BM25 + dense → RRF → rerank → top_k sources, with every stage's trace and timings.

    Raises `QueryError` for unusable input; a request that can match nothing (a recency window in
    the future) returns an empty result whose `explanation` says why.
    """
    t0 = time.perf_counter()
    request = stages.check(query, options)
    if request.empty_reason:
        return RetrievalResult(query=request.query, options=request.options, stages=[], sources=[],
                               explanation=request.empty_reason)
    t1 = time.perf_counter()
    lexical, semantic = stages.legs(request)
    t2 = time.perf_counter()
    fused = stages.fuse(lexical, semantic, request)
    result = stages.rerank(request, lexical, semantic, fused)
    t3 = time.perf_counter()
    result.latency_ms.update(check=(t1 - t0) * 1000, bm25=_ms(lexical), dense=_ms(semantic),
                             legs=(t2 - t1) * 1000, fusion_and_rerank=(t3 - t2) * 1000, total=(t3 - t0) * 1000)
    return result


def _ms(stage: StageResult) -> float:
    return stage.outcome.latency_ms if stage.outcome else 0.0
