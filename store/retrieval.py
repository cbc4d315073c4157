"""Retrieval's database side: exact BM25 (RET-1), the nearest chunks to a query vector (RET-2, HNSW), the
corpus's sectors (for request checks) and chunk texts. `StoredCorpus` offers them to the one pipeline
(`forum_atlas.retrieval.retriever.Retriever`), which embeds the query, fuses and reranks:

    result = retrieve(Retriever(StoredCorpus(db), embedder, reranker), "query", RetrievalOptions(top_k=10))

BM25 scoring runs in the database (`forum.bm25_search`, sql/010_bm25.sql and sql/011: a native
kernel where store/native.py could install one, else PL/pgSQL). Planner settings for the dense
query are set with SET LOCAL inside the query's own transaction, so a prepared statement cannot
run with stale settings.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from forum_atlas.preflight import NO_SEARCHABLE_WORDS
from forum_atlas.providers import ProviderOutcome
from forum_atlas.retrieval.model import (
    BM25_ENGINE,
    BM25_VERSION,
    MAX_SCAN_TUPLES,
    Candidate,
    ChunkText,
    Copy,
    RetrievalOptions,
    StageResult,
)
from forum_atlas.store.db import Database

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


def embedding_model(conn: psycopg.Connection, name: str) -> dict[str, Any] | None:
    """The embedder `name`'s model_id and dim, or None when no chunk has a vector from it."""
    return conn.execute("SELECT model_id, dim FROM forum.embedding_models WHERE name = %s", (name,)).fetchone()


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


def nearest_chunks(conn: psycopg.Connection, model: dict[str, Any], vector: np.ndarray, options: RetrievalOptions, *,
                   exact: bool = False) -> tuple[list[dict[str, Any]], dict[str, bool]]:
    """The `dense_k` searchable chunks within the filters nearest to `vector` (chunk_id, similarity; HNSW, or an
    exact scan), and how the search deviated from the one asked for (`exact_for_selective_filter`, `exact_fallback`)."""
    plan: dict[str, bool] = {}
    if options.filtered and not exact and admitted_chunks(conn, options, EXACT_FILTER_LIMIT + 1) <= EXACT_FILTER_LIMIT:
        exact = plan["exact_for_selective_filter"] = True
    rows = _dense_rows(conn, model, vector, options, exact=exact, limit=options.dense_k)
    if len(rows) < options.dense_k and options.filtered and not exact:
        # The iterative scan gave up before finding k rows that pass the filters: the filtered set is
        # small, so an exact scan over it is cheap and complete.
        rows = _dense_rows(conn, model, vector, options, exact=True, limit=options.dense_k)
        plan["exact_fallback"] = True
    return rows, plan


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


def candidate_chunks(conn: psycopg.Connection, fused: StageResult, options: RetrievalOptions) -> dict[int, ChunkText]:
    """The texts of the fused candidates the reranker will see."""
    return chunk_texts(conn, [c.chunk_id for c in fused.candidates[:options.rerank_candidates]])


@dataclass(frozen=True)
class StoredVectors:
    """The chunk vectors, on one connection: the query embedder's model, then the chunks nearest the query."""
    conn: psycopg.Connection

    def model(self, name: str) -> dict[str, Any] | None:
        return embedding_model(self.conn, name)

    def nearest(self, model: dict[str, Any], vector: np.ndarray, options: RetrievalOptions, *,
                exact: bool) -> tuple[list[dict[str, Any]], dict[str, bool]]:
        return nearest_chunks(self.conn, model, vector, options, exact=exact)


@dataclass(frozen=True)
class StoredCorpus:
    """The corpus in one database, as the retrieval pipeline reads it: each call on its own pooled connection."""
    db: Database

    def known_sectors(self) -> list[str]:
        with self.db.connection() as conn:
            return known_sectors(conn)

    def bm25(self, query: str, options: RetrievalOptions) -> StageResult:
        with self.db.connection() as conn:
            return bm25(conn, query, options)

    @contextmanager
    def vectors(self) -> Iterator[StoredVectors]:
        with self.db.connection() as conn:
            yield StoredVectors(conn)

    def candidate_chunks(self, fused: StageResult, options: RetrievalOptions) -> dict[int, ChunkText]:
        with self.db.connection() as conn:
            return candidate_chunks(conn, fused, options)
