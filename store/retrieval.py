"""Retrieval's database side: exact BM25 (RET-1), dense HNSW search (RET-2), request checks that
need the corpus (known sectors), chunk texts, and `Retriever`, which runs each stage of the one
pipeline (`forum_atlas.retrieval.pipeline.retrieve`) as a plain call:

    result = retrieve(Retriever(db, embedder, reranker), "query", RetrievalOptions(top_k=10))

BM25 scoring runs in the database (`forum.bm25_search`, sql/010_bm25.sql and sql/011: a native
kernel where store/native.py could install one, else PL/pgSQL). Planner settings for the dense
query are set with SET LOCAL inside the query's own transaction, so a prepared statement cannot
run with stale settings.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from forum_atlas.config import Settings
from forum_atlas.embeddings import Embedder, embedder_for
from forum_atlas.preflight import NO_SEARCHABLE_WORDS
from forum_atlas.providers import ProviderError, ProviderOutcome
from forum_atlas.rerank import Reranker, reranker_for
from forum_atlas.retrieval import stages
from forum_atlas.retrieval.model import (
    BM25_ENGINE,
    BM25_VERSION,
    DENSE_ENGINE,
    Candidate,
    ChunkText,
    Copy,
    Request,
    RetrievalOptions,
    RetrievalResult,
    StageResult,
)
from forum_atlas.retrieval.query import QueryError, check_options, clean_query
from forum_atlas.store.db import Database, shared_database

# pgvector stops an iterative scan after this many tuples; past it a filtered search falls back to
# an exact scan of the filtered rows (few, by then), so selective filters still return a full top-k.
MAX_SCAN_TUPLES = 20_000
# A filter admitting at most this many chunks is searched exactly: scoring them all is cheaper than
# walking the graph past the many neighbours the filter rejects.
EXACT_FILTER_LIMIT = 5_000


def _filter_params(options: RetrievalOptions) -> tuple[list[str] | None, Any, Any]:
    return (list(options.sectors) if options.sectors is not None else None,
            options.published_after, options.published_before)


def _filter_conditions(options: RetrievalOptions) -> tuple[sql.Composable, dict[str, Any]]:
    """SQL conditions on `d` (forum.documents) for the active filters only, and their parameters.

    Only the active filters are written out, and filtered queries run with `prepare=False`: psycopg
    prepares a statement after a few executions, and PostgreSQL's generic plan for it neither knows
    that a filter is absent nor how selective the sector list is — a 1 % filter then scanned every
    document (~250 ms at 100k chunks) instead of using the (sector, published_at) index.
    """
    sectors, after, before = _filter_params(options)
    conditions, params = [sql.SQL("TRUE")], {}
    if sectors is not None:
        conditions.append(sql.SQL("d.sector = ANY (%(sectors)s::text[])"))
        params["sectors"] = sectors
    if after is not None:
        conditions.append(sql.SQL("d.published_at >= %(after)s::timestamptz"))
        params["after"] = after
    if before is not None:
        conditions.append(sql.SQL("d.published_at < %(before)s::timestamptz"))
        params["before"] = before
    return sql.SQL(" AND ").join(conditions), params


def bm25(conn: psycopg.Connection, query: str, options: RetrievalOptions) -> StageResult:
    sectors, after, before = _filter_params(options)
    start = time.perf_counter()
    rows = conn.execute(
        """SELECT chunk_id, score, rank, (SELECT forum.bm25_engine()) AS served_by
             FROM forum.bm25_search(%s, %s, %s::text[], %s::timestamptz, %s::timestamptz, %s, %s, %s)""",
        (query, options.bm25_k, sectors, after, before, options.k1, options.b, options.epsilon),
    ).fetchall()
    outcome = ProviderOutcome(provider=BM25_ENGINE, stage="bm25", latency_ms=(time.perf_counter() - start) * 1000)
    served_by = rows[0]["served_by"] if rows else conn.execute("SELECT forum.bm25_engine() AS e").fetchone()["e"]
    stage = StageResult(
        stage="bm25", engine=BM25_ENGINE, version=f"{BM25_VERSION}; {served_by}",
        parameters={"k": options.bm25_k, "k1": options.k1, "b": options.b, "epsilon": options.epsilon,
                    "analyzer": "forum.analyze (english)", **options.filters()},
        candidates=[Candidate(r["chunk_id"], r["rank"], r["score"]) for r in rows], outcome=outcome)
    if not rows:
        terms = conn.execute("SELECT count(*) AS n FROM forum.bm25_query_terms(%s)", (query,)).fetchone()["n"]
        stage.note = (NO_SEARCHABLE_WORDS if terms == 0
                      else "no searchable chunk contains a query term" + (" within the filters" if options.filtered else ""))
    return stage


def embedding_model(conn: psycopg.Connection, embedder: Embedder) -> dict[str, Any] | None:
    return conn.execute("SELECT model_id, dim FROM forum.embedding_models WHERE name = %s",
                        (embedder.name,)).fetchone()


@contextmanager
def _local_settings(conn: psycopg.Connection, settings: dict[str, Any]) -> Iterator[None]:
    """Run the block in its own top-level transaction with these planner settings, which end with it
    (inside a savepoint they would outlive it). Reads only: committing the caller's read
    transaction first is harmless."""
    conn.commit()
    with conn.transaction():
        for name, value in settings.items():
            conn.execute("SELECT set_config(%s, %s, true)", (name, str(value)))
        yield


def _dense_rows(conn: psycopg.Connection, model: dict[str, Any], vector: np.ndarray, options: RetrievalOptions,
                *, exact: bool, limit: int) -> list[dict[str, Any]]:
    dim = sql.Literal(int(model["dim"]))
    filters, params = _filter_conditions(options)
    distance = sql.SQL("e.embedding::vector({dim}) <=> %(q)s::vector({dim})").format(dim=dim)
    query = sql.SQL(
        """SELECT e.chunk_id, 1 - ({distance}) AS similarity
             FROM forum.embeddings e
             JOIN forum.chunks c ON c.chunk_id = e.chunk_id
             JOIN forum.documents d ON d.document_id = c.document_id
            WHERE e.model_id = %(model)s AND c.searchable AND {filters}
            ORDER BY {order}
            LIMIT %(limit)s""").format(distance=distance, filters=filters,
                                     # "+ 0" hides the ordering from the HNSW index: an exact scan.
                                     order=sql.SQL("({}) + 0").format(distance) if exact else distance)
    # An exact scan reads few rows (selective filters) or is a benchmark reference: either way a
    # parallel worker's start-up costs more than it saves.
    settings = ({"max_parallel_workers_per_gather": 0} if exact else
                {"hnsw.ef_search": options.ef_search, "hnsw.iterative_scan": "strict_order",
                 "hnsw.max_scan_tuples": MAX_SCAN_TUPLES})
    with _local_settings(conn, settings):
        return conn.execute(query, {"q": vector, "model": model["model_id"], "limit": limit, **params},
                            prepare=False if options.filtered else None).fetchall()


def dense(conn: psycopg.Connection, embedder: Embedder, query: str, options: RetrievalOptions, *,
          exact: bool = False) -> StageResult:
    """Top `dense_k` chunks by cosine similarity (HNSW), then those at or above the threshold."""
    parameters = {"k": options.dense_k, "threshold": options.dense_threshold, "ef_search": options.ef_search,
                  "iterative_scan": "strict_order", "max_scan_tuples": MAX_SCAN_TUPLES, "exact": exact,
                  "embedder": embedder.name, **options.filters()}
    stage = StageResult(stage="dense", engine=DENSE_ENGINE, version=f"{embedder.engine} {embedder.version}",
                        parameters=parameters)
    start = time.perf_counter()
    model = embedding_model(conn, embedder)
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
    if options.filtered and not exact and admitted_chunks(conn, options, EXACT_FILTER_LIMIT + 1) <= EXACT_FILTER_LIMIT:
        exact = parameters["exact_for_selective_filter"] = True
    rows = _dense_rows(conn, model, vector, options, exact=exact, limit=options.dense_k)
    if len(rows) < options.dense_k and options.filtered and not exact:
        # The iterative scan gave up before finding k rows that pass the filters: the filtered set is
        # small, so an exact scan over it is cheap and complete.
        rows = _dense_rows(conn, model, vector, options, exact=True, limit=options.dense_k)
        parameters["exact_fallback"] = True
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


def admitted_chunks(conn: psycopg.Connection, options: RetrievalOptions, cap: int) -> int:
    """How many searchable chunks the filters admit, counted up to `cap`."""
    filters, params = _filter_conditions(options)
    # A few thousand index probes at most: a parallel worker's start-up costs more than it saves.
    with _local_settings(conn, {"max_parallel_workers_per_gather": 0}):
        return conn.execute(sql.SQL(
            """SELECT count(*) AS n FROM (
               SELECT 1 FROM forum.documents d JOIN forum.chunks c ON c.document_id = d.document_id
                WHERE c.searchable AND {filters}
                LIMIT %(cap)s) AS admitted""").format(filters=filters), {"cap": cap, **params},
            prepare=False).fetchone()["n"]


def passage_place(chunk: str = "c", document: str = "d") -> str:
    """Select-list SQL for where a chunk sits in its file (sql/090): first_page, last_page, section, file, and
    reader (the library and version that read the file); `chunk` and `document` are the query's aliases."""
    c, d = chunk, document
    return f"""(forum.chunk_pages({d}.metadata -> 'page_starts', {c}.start_char, {c}.end_char)).*,
               forum.section_at({d}.metadata -> 'sections', {c}.start_char) AS section, {d}.metadata ->> 'file' AS file,
               {d}.metadata ->> 'reader' || ' ' || ({d}.metadata ->> 'reader_version') AS reader"""


def chunk_texts(conn: psycopg.Connection, chunk_ids: Iterable[int]) -> dict[int, ChunkText]:
    """The chunks, each with its document's content hash and the other searchable documents that have the
    same content (sql/170's index), oldest first."""
    rows = conn.execute(
        f"""SELECT c.chunk_id, c.document_id, c.heading, c.body, d.url, d.sector, d.published_at,
                  s.name AS source_name, d.version, c.start_char, c.end_char, s.importance, s.quality_score,
                  {passage_place()}, d.content_hash,
                  (SELECT coalesce(jsonb_agg(jsonb_build_object(
                              'document_id', t.document_id, 'source_name', ts.name, 'title', t.title,
                              'url', t.url, 'file', t.metadata ->> 'file') ORDER BY t.document_id), '[]')
                     FROM forum.documents t JOIN forum.sources ts ON ts.source_id = t.source_id
                    WHERE t.content_hash = d.content_hash AND t.document_id <> d.document_id
                      AND t.is_current AND NOT t.retracted AND NOT t.withdrawn AND NOT t.superseded) AS also_in
             FROM forum.chunks c JOIN forum.documents d USING (document_id) JOIN forum.sources s USING (source_id)
            WHERE c.chunk_id = ANY (%s) AND c.searchable""",
        (list(chunk_ids),),
    ).fetchall()
    return {r["chunk_id"]: ChunkText(r["chunk_id"], r["document_id"], r["heading"], r["body"], r["url"],
                                     r["sector"], r["published_at"], r["source_name"], r["version"],
                                     r["start_char"], r["end_char"], r["importance"], r["quality_score"],
                                     r["first_page"], r["last_page"], r["section"], r["file"], r["reader"],
                                     r["content_hash"], tuple(Copy(**copy) for copy in r["also_in"]))
            for r in rows}


def known_sectors(conn: psycopg.Connection) -> list[str]:
    """Sectors of current documents. A skip scan over the (sector, published_at) index: one probe
    per sector instead of reading every document (~150 ms at 100k documents)."""
    return [r["sector"] for r in conn.execute(
        """WITH RECURSIVE s AS (
             (SELECT sector FROM forum.documents ORDER BY sector LIMIT 1)
             UNION ALL
             SELECT (SELECT d.sector FROM forum.documents d WHERE d.sector > s.sector ORDER BY d.sector LIMIT 1)
               FROM s WHERE s.sector IS NOT NULL)
           SELECT s.sector FROM s
            WHERE s.sector IS NOT NULL
              AND EXISTS (SELECT 1 FROM forum.documents d WHERE d.sector = s.sector AND d.is_current)
            ORDER BY s.sector""").fetchall()]


def prepare_request(conn: psycopg.Connection, query: str, options: RetrievalOptions) -> tuple[str, RetrievalOptions, str]:
    """(clean query, checked options, reason it can match nothing or ""). Raises QueryError."""
    text = clean_query(query)
    sectors = known_sectors(conn) if options.sectors is not None else []
    checked, empty_reason = check_options(options, sectors)
    return text, checked, empty_reason


def candidate_chunks(conn: psycopg.Connection, fused: StageResult, options: RetrievalOptions) -> dict[int, ChunkText]:
    """The texts of the fused candidates the reranker will see."""
    return chunk_texts(conn, [c.chunk_id for c in fused.candidates[:options.rerank_candidates]])


# The BM25 legs of plain (not task-run) retrievals; shared by every Retriever in the process.
_LEG_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bm25-leg")


@dataclass(frozen=True)
class Retriever:
    """The pipeline's stages as plain calls on one database, query embedder and reranker."""
    db: Database
    embedder: Embedder
    reranker: Reranker

    @classmethod
    def from_settings(cls, settings: Settings) -> "Retriever":
        return cls(shared_database(settings), embedder_for(settings), reranker_for(settings))

    def __repr__(self) -> str:  # what the Prefect UI shows as a task parameter
        return f"Retriever(embedder={self.embedder.name}, reranker={self.reranker.name})"

    def check(self, query: str, options: RetrievalOptions) -> Request:
        with self.db.connection() as conn:
            return Request(*prepare_request(conn, query, options))

    def bm25(self, request: Request) -> StageResult:
        with self.db.connection() as conn:
            return bm25(conn, request.query, request.options)

    def dense(self, request: Request) -> StageResult:
        with self.db.connection() as conn:
            return dense(conn, self.embedder, request.query, request.options)

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
        with self.db.connection() as conn:
            chunks = candidate_chunks(conn, fused, request.options)
        return stages.finish(request.query, request.options, lexical, semantic, fused, chunks, self.reranker)
