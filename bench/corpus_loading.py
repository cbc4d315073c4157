"""Load benchmark corpora through the real ingestion path (validation aside) and time it.

Shared by the retrieval benchmarks: SciFact (BEIR) for quality, the synthetic corpus for speed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from forum_atlas.embeddings.base import Embedder
from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import SCIFACT_SOURCE, Record, iter_raw, load_rows, source_conflict, to_records
from forum_atlas.store.db import Database
from forum_atlas.store.documents import compact_bm25_postings, ensure_embedding_index, register_embedder, write_batch

# One chunk per abstract: longer than SciFact's longest abstract (BEIR evaluates whole documents).
WHOLE_DOCUMENT = ChunkingOptions(max_chars=10_000, overlap_chars=0)


@dataclass
class LoadReport:
    chunks: int
    seconds: float
    bm25_trigger_seconds: float
    index_seconds: float
    compaction_seconds: float

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds else 0.0


def fresh_database(server_url: str, name: str) -> str:
    """(Re)create database `name` on the server and return its URL; PL function timing is on."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(sql.Identifier(name)))
    return make_conninfo(server_url, dbname=name)


def scifact_records(beir_dir: Path, batch_size: int = 1000) -> Iterable[list[Record]]:
    for raw in iter_raw(beir_dir, "beir", batch_size=batch_size):
        yield to_records(load_rows(raw, SCIFACT_SOURCE))


def _bm25_function_ms(db: Database) -> float:
    with db.connection() as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            """SELECT coalesce(sum(total_time), 0) AS ms FROM pg_stat_user_functions
                WHERE schemaname = 'forum' AND funcname = 'bm25_apply'"""
        ).fetchone()
    return float(row["ms"])


def load(db: Database, batches: Iterable[Sequence[Record]], embedder: Embedder,
         options: ChunkingOptions = WHOLE_DOCUMENT, *, progress: bool = False) -> LoadReport:
    """Ingest `batches` (one transaction each), then build the embedding model's HNSW index and
    merge the BM25 posting blocks, as the ingest flow does.

    The time spent in the BM25 maintenance trigger is read from pg_stat_user_functions: open `db`
    on a database made by `fresh_database`, which switches track_functions on.
    """
    before = _bm25_function_ms(db)
    chunks = 0
    start = time.perf_counter()
    for i, records in enumerate(batches):
        written = write_batch(db, records, prepare(records, embedder, options), source_conflict)
        chunks += written.chunks_added
        if progress and i % 10 == 9:
            print(f"  … {chunks:,} chunks, {chunks / (time.perf_counter() - start):,.0f}/s", flush=True)
    seconds = time.perf_counter() - start
    trigger_seconds = (_bm25_function_ms(db) - before) / 1000.0
    index_start = time.perf_counter()
    model = register_embedder(db, embedder.name, embedder.engine, embedder.version, embedder.dim)
    ensure_embedding_index(db, model["model_id"])
    index_seconds = time.perf_counter() - index_start
    compaction = compact_bm25_postings(db)
    with db.connection() as conn:
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
        conn.autocommit = False
    return LoadReport(chunks, seconds, trigger_seconds, index_seconds, compaction.seconds)
