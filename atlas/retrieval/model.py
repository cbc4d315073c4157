"""What a retrieval is asked (options) and what it returns (a traced result) — RET-1…6.

Ranks are 1-based everywhere: the best candidate of a stage has rank 1. A `RetrievalResult`
carries every stage's candidates with their scores and ranks, the parameters used, the engines
(name and version) and each provider's typed outcome, so it can go into an evidence snapshot as is
(`as_dict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from forum_atlas.providers import ProviderOutcome

BM25_ENGINE = "postgresql-bm25okapi"
BM25_VERSION = "forum.bm25_search/011 (rank_bm25 0.2.2 BM25Okapi semantics)"
DENSE_ENGINE = "pgvector-hnsw-cosine"
# pgvector stops an iterative scan after this many tuples; past it a filtered search falls back to
# an exact scan of the filtered rows (few, by then), so selective filters still return a full top-k.
MAX_SCAN_TUPLES = 20_000
FUSION_ENGINE = "reciprocal-rank-fusion"


@dataclass(frozen=True)
class RetrievalOptions:
    bm25_k: int = 20                 # BM25 candidates passed to fusion
    dense_k: int = 20                # RET-2: top 20 by cosine similarity
    dense_threshold: float = 0.45    # RET-2: candidates below this cosine similarity are dropped
    ef_search: int = 100             # HNSW candidate list size (recall vs latency)
    rrf_k: int = 50                  # RET-3
    rerank_candidates: int = 20      # fused candidates the reranker sees
    top_k: int = 5                   # RET-4: final sources
    one_per_document: bool = True    # a source is a document: its best-ranked passage stands for it
    max_context_chars: int = 4000    # RET-4: per source
    sectors: tuple[str, ...] | None = None
    published_after: datetime | None = None   # inclusive
    published_before: datetime | None = None  # exclusive
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25

    def with_changes(self, **changes: Any) -> "RetrievalOptions":
        return replace(self, **changes)

    @property
    def filtered(self) -> bool:
        return self.sectors is not None or self.published_after is not None or self.published_before is not None

    def filters(self) -> dict[str, Any]:
        return {
            "sectors": list(self.sectors) if self.sectors is not None else None,
            "published_after": self.published_after.isoformat() if self.published_after else None,
            "published_before": self.published_before.isoformat() if self.published_before else None,
        }


@dataclass(frozen=True)
class Request:
    """A checked retrieval request: the cleaned query, the normalised options, and the reason it can
    match nothing ("" when it can)."""
    query: str
    options: RetrievalOptions
    empty_reason: str = ""


@dataclass(frozen=True)
class Candidate:
    chunk_id: int
    rank: int      # 1-based within its stage
    score: float


@dataclass
class StageResult:
    stage: str                       # bm25 | dense | fusion | rerank
    engine: str
    version: str
    parameters: dict[str, Any]
    candidates: list[Candidate] = field(default_factory=list)
    outcome: ProviderOutcome | None = None
    note: str = ""                   # why the list is empty or degraded, in words

    @property
    def degraded(self) -> bool:
        return self.outcome is not None and self.outcome.kind != "ok"

    def ranks(self) -> dict[int, int]:
        return {c.chunk_id: c.rank for c in self.candidates}

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage, "engine": self.engine, "version": self.version, "parameters": self.parameters,
            "candidates": [asdict(c) for c in self.candidates],
            "outcome": self.outcome.as_dict() if self.outcome else None, "note": self.note,
        }


@dataclass(frozen=True)
class Copy:
    """Another searchable document with the same content (title and text) as a source's: the same paper
    ingested twice (the demo's copy and the user's) is one hit that names every copy."""
    document_id: int
    source_name: str
    title: str
    url: str | None = None
    file: str | None = None

    def describe(self) -> str:
        """"Library (paper.pdf)": the source, and the file where there is one."""
        return self.source_name + (f" ({self.file})" if self.file else "")


@dataclass(frozen=True)
class ChunkText:
    """What the database returns for a candidate chunk."""
    chunk_id: int
    document_id: int
    title: str
    body: str
    url: str | None
    sector: str
    published_at: datetime | None
    source_name: str
    document_version: int
    start_char: int = 0
    end_char: int = 0
    importance: int = 3       # the source's (1–5), as stored now
    quality_score: int = 3
    first_page: int | None = None   # of a document read from a paged file (PDF), else None
    last_page: int | None = None
    section: str | None = None      # the section title the chunk starts in, where the file has sections
    file: str | None = None         # the input file it was read from
    reader: str | None = None       # the library (and version) that read that file
    content_hash: str = ""          # its document's (title and text): identical content, identical hash
    also_in: tuple[Copy, ...] = ()  # the other searchable documents with that content

    def same_passage(self) -> tuple[object, int, int]:
        """Equal for two chunks holding the same passage of identical documents (the same offsets)."""
        return (self.content_hash or self.document_id, self.start_char, self.end_char)


@dataclass
class Source:
    """A final source: its passage (capped to the context budget) and its rank in every stage."""
    chunk: ChunkText
    context: str
    truncated: bool
    ranks: dict[str, int | None]
    scores: dict[str, float | None]

    def as_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk.chunk_id, "document_id": self.chunk.document_id,
            "document_version": self.chunk.document_version, "title": self.chunk.title,
            "start_char": self.chunk.start_char, "end_char": self.chunk.end_char,
            "first_page": self.chunk.first_page, "last_page": self.chunk.last_page, "section": self.chunk.section,
            "file": self.chunk.file, "reader": self.chunk.reader,
            "source": self.chunk.source_name, "url": self.chunk.url, "sector": self.chunk.sector,
            "published_at": self.chunk.published_at.isoformat() if self.chunk.published_at else None,
            "also_in": [asdict(c) for c in self.chunk.also_in],
            "context": self.context, "truncated": self.truncated, "ranks": self.ranks, "scores": self.scores,
        }


@dataclass
class RetrievalResult:
    query: str
    options: RetrievalOptions
    stages: list[StageResult]
    sources: list[Source]
    explanation: str = ""            # set when there are no sources: why
    latency_ms: dict[str, float] = field(default_factory=dict)

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)

    @property
    def degraded_stages(self) -> list[str]:
        return [s.stage for s in self.stages if s.degraded]

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "options": {k: (v.isoformat() if isinstance(v, datetime) else list(v) if isinstance(v, tuple) else v)
                        for k, v in asdict(self.options).items()},
            "stages": [s.as_dict() for s in self.stages],
            "sources": [s.as_dict() for s in self.sources],
            "degraded_stages": self.degraded_stages,
            "explanation": self.explanation,
            "latency_ms": self.latency_ms,
        }
