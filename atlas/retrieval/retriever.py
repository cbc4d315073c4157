"""`Retriever`: each stage of the one pipeline (`forum_atlas.retrieval.pipeline.retrieve`) as a plain call
on a corpus (the database side, `forum_atlas.store.retrieval.StoredCorpus`), a query embedder and a reranker:

    result = retrieve(Retriever(StoredCorpus(db), embedder, reranker), "query", RetrievalOptions(top_k=10))

The corpus runs the SQL (BM25, the nearest vectors, chunk texts); the query is cleaned and embedded, the
candidates fused and reranked here.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from forum_atlas.config import Settings
from forum_atlas.embeddings import Embedder, embedder_for
from forum_atlas.rerank import Reranker, reranker_for
from forum_atlas.retrieval import stages
from forum_atlas.retrieval.model import ChunkText, Request, RetrievalOptions, RetrievalResult, StageResult
from forum_atlas.retrieval.query import check_options, clean_query


class Corpus(Protocol):
    """What retrieval reads from the stored corpus."""

    def known_sectors(self) -> Iterable[str]: ...

    def bm25(self, query: str, options: RetrievalOptions) -> StageResult: ...

    def vectors(self) -> AbstractContextManager[stages.VectorIndex]:
        """The chunk vectors, held for one dense search (the model lookup and the search share a connection)."""
        ...

    def candidate_chunks(self, fused: StageResult, options: RetrievalOptions) -> dict[int, ChunkText]:
        """The texts of the fused candidates the reranker will see."""
        ...


# The BM25 legs of plain (not task-run) retrievals; shared by every Retriever in the process.
_LEG_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bm25-leg")


@dataclass(frozen=True)
class Retriever:
    """The pipeline's stages as plain calls on one corpus, query embedder and reranker."""
    corpus: Corpus
    embedder: Embedder
    reranker: Reranker

    @classmethod
    def from_settings(cls, settings: Settings, corpus: Corpus) -> "Retriever":
        return cls(corpus, embedder_for(settings), reranker_for(settings))

    def __repr__(self) -> str:  # what the Prefect UI shows as a task parameter
        return f"Retriever(embedder={self.embedder.name}, reranker={self.reranker.name})"

    def check(self, query: str, options: RetrievalOptions) -> Request:
        """(clean query, checked options, reason it can match nothing or ""). Raises QueryError."""
        text = clean_query(query)
        sectors = self.corpus.known_sectors() if options.sectors is not None else []
        checked, empty_reason = check_options(options, sectors)
        return Request(text, checked, empty_reason)

    def bm25(self, request: Request) -> StageResult:
        return self.corpus.bm25(request.query, request.options)

    def dense(self, request: Request) -> StageResult:
        with self.corpus.vectors() as index:
            return stages.dense(self.embedder, request.query, request.options, index)

    def legs(self, request: Request) -> tuple[StageResult, StageResult]:
        # At once, on two connections: each leg mostly waits on its server backend, so the pair costs
        # the slower leg, not the sum (as the task runner's concurrent legs do in a flow).
        lexical = _LEG_THREADS.submit(self.bm25, request)
        semantic = self.dense(request)
        return lexical.result(), semantic

    def fuse(self, lexical: StageResult, semantic: StageResult, request: Request) -> StageResult:
        return stages.fuse(lexical, semantic, request.options)

    def rerank(self, request: Request, lexical: StageResult, semantic: StageResult,
               fused: StageResult) -> RetrievalResult:
        chunks = self.corpus.candidate_chunks(fused, request.options)
        return stages.finish(request.query, request.options, lexical, semantic, fused, chunks, self.reranker)
