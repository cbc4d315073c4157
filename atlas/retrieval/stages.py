"""Pure retrieval stages: dense search (the query embedded, its nearest chunks looked up in a `VectorIndex`),
fusion, reranking with a typed fallback, and the final sources.

BM25 and the vector lookups are SQL in `forum_atlas.store.retrieval`; these take their rows and candidate
lists. `forum_atlas.retrieval.pipeline.retrieve` runs them all in order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from forum_atlas.embeddings import Embedder
from forum_atlas.providers import ProviderError, ProviderOutcome, observed
from forum_atlas.rerank.base import Reranker
from forum_atlas.retrieval.context import cap_context
from forum_atlas.retrieval.fusion import reciprocal_rank_fusion
from forum_atlas.retrieval.model import (
    DENSE_ENGINE,
    FUSION_ENGINE,
    MAX_SCAN_TUPLES,
    Candidate,
    ChunkText,
    RetrievalOptions,
    RetrievalResult,
    Source,
    StageResult,
)
from forum_atlas.retrieval.query import QueryError

RETRIEVAL_STAGES = ("bm25", "dense", "fusion", "rerank")


class VectorIndex(Protocol):
    """The stored chunk vectors (`forum_atlas.store.retrieval.StoredVectors`)."""

    def model(self, name: str) -> dict[str, Any] | None:
        """The embedder's stored model (model_id, dim), or None when no chunk has a vector from it."""
        ...

    def nearest(self, model: dict[str, Any], vector: np.ndarray, options: RetrievalOptions, *,
                exact: bool) -> tuple[list[dict[str, Any]], dict[str, bool]]:
        """(the `dense_k` nearest chunks' rows: chunk_id, similarity; how the search deviated from `exact`)."""
        ...


def dense(embedder: Embedder, query: str, options: RetrievalOptions, index: VectorIndex, *,
          exact: bool = False) -> StageResult:
    """Top `dense_k` chunks by cosine similarity (HNSW), then those at or above the threshold: the query
    embedded with `embedder`, its nearest chunks found in `index`."""
    parameters = {"k": options.dense_k, "threshold": options.dense_threshold, "ef_search": options.ef_search,
                  "iterative_scan": "strict_order", "max_scan_tuples": MAX_SCAN_TUPLES, "exact": exact,
                  "embedder": embedder.name, **options.filters()}
    stage = StageResult(stage="dense", engine=DENSE_ENGINE, version=f"{embedder.engine} {embedder.version}",
                        parameters=parameters)
    start = time.perf_counter()
    model = index.model(embedder.name)
    if model is None:
        stage.outcome = ProviderOutcome(provider=embedder.name, stage="dense")
        stage.note = f"no chunk has an embedding from {embedder.name}: ingest with this embedder first"
        return stage
    if int(model["dim"]) != embedder.dim:
        raise QueryError(f"{embedder.name} makes {embedder.dim}-d vectors but the stored ones have {model['dim']}")
    try:
        vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
    except ProviderError as exc:
        stage.outcome = ProviderOutcome(provider=embedder.name, stage="dense", kind=exc.kind, detail=exc.detail,
                                        attempts=exc.attempts, latency_ms=(time.perf_counter() - start) * 1000)
        stage.note = f"query embedding failed ({exc.kind}); dense search skipped"
        return stage
    if not np.linalg.norm(vector):
        stage.outcome = ProviderOutcome(provider=embedder.name, stage="dense")
        stage.note = "the query embeds to a zero vector (no word the embedder knows)"
        return stage
    rows, plan = index.nearest(model, vector, options, exact=exact)
    parameters.update(plan)
    # Equal similarities (e.g. orthogonal vectors) come back in index order: make ties deterministic.
    rows.sort(key=lambda r: (-r["similarity"], r["chunk_id"]))
    kept = [r for r in rows if r["similarity"] >= options.dense_threshold]
    stage.candidates = [Candidate(r["chunk_id"], i, float(r["similarity"])) for i, r in enumerate(kept, start=1)]
    stage.outcome = ProviderOutcome(provider=embedder.name, stage="dense",
                                    latency_ms=(time.perf_counter() - start) * 1000)
    if not kept:
        stage.note = (f"no chunk reaches cosine similarity {options.dense_threshold}" if rows
                      else "no embedded chunk" + (" within the filters" if options.filtered else ""))
    return stage




def fuse(bm25: StageResult, dense: StageResult, options: RetrievalOptions) -> StageResult:
    fused = reciprocal_rank_fusion({"bm25": bm25.candidates, "dense": dense.candidates}, k=options.rrf_k)
    return StageResult(
        stage="fusion", engine=FUSION_ENGINE, version="1",
        parameters={"k": options.rrf_k, "rank_base": 1, "inputs": ["bm25", "dense"]},
        candidates=fused, outcome=ProviderOutcome(provider=FUSION_ENGINE, stage="fusion"),
        note="" if fused else "neither BM25 nor dense search returned a candidate",
    )


def _final(ranked: Sequence[Candidate], options: RetrievalOptions,
           document_of: Mapping[int, int] | None) -> list[Candidate]:
    """The first `top_k` candidates, re-ranked 1…k; with `one_per_document`, later passages of a
    document already chosen are skipped, so the sources are distinct documents."""
    chosen: list[Candidate] = []
    seen: set[int] = set()
    for candidate in ranked:
        document = (document_of or {}).get(candidate.chunk_id) if options.one_per_document else None
        if document is not None:
            if document in seen:
                continue
            seen.add(document)
        chosen.append(Candidate(candidate.chunk_id, len(chosen) + 1, candidate.score))
        if len(chosen) == options.top_k:
            break
    return chosen


def rerank(reranker: Reranker, query: str, fused: StageResult, texts: Mapping[int, str],
           options: RetrievalOptions, document_of: Mapping[int, int] | None = None) -> StageResult:
    """Rerank the top fused candidates and keep `top_k` (distinct documents when `document_of`,
    chunk id → document id, is given and `options.one_per_document` holds).

    If the reranker fails, the stage falls back to the fused order, records the typed outcome of the
    failure (timeout, rate_limited, auth, unavailable, bad_response) and says that it degraded: it
    never returns an empty success.
    """
    pool = [c for c in fused.candidates[:options.rerank_candidates] if c.chunk_id in texts]
    parameters = {"top_k": options.top_k, "candidates": len(pool), "max_context_chars": options.max_context_chars,
                  "one_per_document": bool(options.one_per_document and document_of is not None)}
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
        stage.candidates = _final(pool, options, document_of)
        return stage
    stage.outcome = outcome
    stage.candidates = _final([Candidate(pool[index].chunk_id, rank, score)
                               for rank, (index, score) in enumerate(ranked, start=1)], options, document_of)
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


def rerank_texts(chunks: Mapping[int, ChunkText], options: RetrievalOptions) -> dict[int, str]:
    """What a reranker reads per candidate: title and passage, within the context budget."""
    out = {}
    for chunk_id, chunk in chunks.items():
        body, _ = cap_context(chunk.body, options.max_context_chars)
        out[chunk_id] = f"{chunk.title}\n{body}" if chunk.title else body
    return out


def first_copies(fused: StageResult, chunks: Mapping[int, ChunkText]) -> dict[int, ChunkText]:
    """The candidates' chunks less those that repeat a passage fused higher (identical documents from two
    sources, the same offsets): identical content is one hit, whose chunk names the other copies."""
    seen: set[tuple[object, int, int]] = set()
    kept = {}
    for candidate in fused.candidates:
        chunk = chunks.get(candidate.chunk_id)
        if chunk is not None and chunk.same_passage() not in seen:
            seen.add(chunk.same_passage())
            kept[candidate.chunk_id] = chunk
    return kept


def finish(query: str, options: RetrievalOptions, lexical: StageResult, semantic: StageResult,
           fused: StageResult, chunks: Mapping[int, ChunkText], reranker: Reranker) -> RetrievalResult:
    """Rerank (falling back to the fused order on failure) and assemble the traced result. Identical
    content is one hit: a copy of a passage fused higher is not reranked, and with `one_per_document`
    identical documents count as one."""
    start = time.perf_counter()
    distinct = first_copies(fused, chunks)
    reranked = rerank(reranker, query, fused, rerank_texts(distinct, options), options,
                      {chunk_id: chunk.content_hash or chunk.document_id for chunk_id, chunk in distinct.items()})
    reranked.parameters["identical_copies_merged"] = len(chunks) - len(distinct)
    all_stages = [lexical, semantic, fused, reranked]
    sources = assemble_sources(all_stages, reranked, chunks, options)
    return RetrievalResult(query=query, options=options, stages=all_stages, sources=sources,
                           explanation="" if sources else explain_empty(all_stages),
                           latency_ms={"rerank": (time.perf_counter() - start) * 1000})
