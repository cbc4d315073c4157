"""Pure retrieval stages: fusion, reranking with a typed fallback, and the final sources.

The database stages (BM25, dense) live in `store.retrieval`; these take their candidate lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from atlas.providers import ProviderError, ProviderOutcome, observed
from atlas.rerank.base import Reranker
from atlas.retrieval.context import cap_context
from atlas.retrieval.fusion import reciprocal_rank_fusion
from atlas.retrieval.model import (
    FUSION_ENGINE,
    Candidate,
    ChunkText,
    RetrievalOptions,
    Source,
    StageResult,
)

RETRIEVAL_STAGES = ("bm25", "dense", "fusion", "rerank")


def fuse(bm25: StageResult, dense: StageResult, options: RetrievalOptions) -> StageResult:
    fused = reciprocal_rank_fusion({"bm25": bm25.candidates, "dense": dense.candidates}, k=options.rrf_k)
    return StageResult(
        stage="fusion", engine=FUSION_ENGINE, version="1",
        parameters={"k": options.rrf_k, "rank_base": 1, "inputs": ["bm25", "dense"]},
        candidates=fused, outcome=ProviderOutcome(provider=FUSION_ENGINE, stage="fusion"),
        note="" if fused else "neither BM25 nor dense search returned a candidate",
    )


def rerank(reranker: Reranker, query: str, fused: StageResult, texts: Mapping[int, str],
           options: RetrievalOptions) -> StageResult:
    """Rerank the top fused candidates and keep `top_k`.

    If the reranker fails, the stage falls back to the fused order, records the typed outcome of the
    failure (timeout, rate_limited, auth, unavailable, bad_response) and says that it degraded: it
    never returns an empty success.
    """
    pool = [c for c in fused.candidates[:options.rerank_candidates] if c.chunk_id in texts]
    parameters = {"top_k": options.top_k, "candidates": len(pool), "max_context_chars": options.max_context_chars}
    stage = StageResult(stage="rerank", engine=reranker.engine, version=reranker.version, parameters=parameters)
    if not pool:
        stage.outcome = ProviderOutcome(provider=reranker.name, stage="rerank")
        stage.note = "nothing to rerank: fusion returned no candidate"
        return stage
    passages = [texts[c.chunk_id] for c in pool]
    try:
        with observed(reranker.name, "rerank") as outcome:
            ranked = reranker.rerank(query, passages)
            outcome.attempts = getattr(reranker, "last_attempts", 0) or outcome.attempts
    except ProviderError as exc:
        stage.outcome = outcome
        stage.note = (f"reranker {reranker.name} failed ({exc.kind}: {exc.detail}); "
                      f"degraded to the fused order")
        stage.candidates = [Candidate(c.chunk_id, i, c.score) for i, c in enumerate(pool[:options.top_k], start=1)]
        return stage
    stage.outcome = outcome
    stage.candidates = [Candidate(pool[index].chunk_id, rank, score)
                        for rank, (index, score) in enumerate(ranked[:options.top_k], start=1)]
    return stage


def assemble_sources(stages: Sequence[StageResult], final: StageResult, chunks: Mapping[int, ChunkText],
                     options: RetrievalOptions) -> list[Source]:
    """The final sources in `final`'s order, each with its context capped and its rank and score in
    every stage (None where a stage did not return it)."""
    by_stage = {s.stage: {c.chunk_id: c for c in s.candidates} for s in stages}
    sources = []
    for candidate in final.candidates:
        chunk = chunks.get(candidate.chunk_id)
        if chunk is None:
            continue
        context, truncated = cap_context(chunk.body, options.max_context_chars)
        ranks: dict[str, int | None] = {}
        scores: dict[str, float | None] = {}
        for name in RETRIEVAL_STAGES:
            hit = by_stage.get(name, {}).get(candidate.chunk_id)
            ranks[name] = hit.rank if hit else None
            scores[name] = hit.score if hit else None
        sources.append(Source(chunk=chunk, context=context, truncated=truncated, ranks=ranks, scores=scores))
    return sources


def explain_empty(stages: Sequence[StageResult]) -> str:
    notes = [f"{s.stage}: {s.note}" for s in stages if s.note]
    return "no source matched the query" + (f" ({'; '.join(notes)})" if notes else "")
