"""Ingestion tasks: load → validate → chunk → embed → write, plus the indexes after a load (HNSW
build, BM25 posting compaction).

Each batch task takes and returns the same `BatchInFlight`, filling in its next stage.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from forum_atlas import ingestion
from forum_atlas.chunking import ChunkingOptions
from forum_atlas.config import Settings
from forum_atlas.embeddings import embedder_for
from forum_atlas.ingestion import BatchInFlight, WriteResult
from forum_atlas.records import Format, SourceInfo, load_rows, scan_ids, to_records
from forum_atlas.store import documents
from forum_atlas.store.db import record_event, shared_database
from forum_atlas.validation import BatchValidationError, ValidationReport, validate_rows, validate_unique_ids

# Batches are large, short-lived values: never hash or persist them.
ingest_task = task(cache_policy=NO_CACHE, persist_result=False)


@ingest_task
def load_batch(batch: BatchInFlight, source: SourceInfo | None) -> BatchInFlight:
    batch.rows = load_rows(batch.raw, source)
    return batch


def _refuse(report: ValidationReport, description: str) -> None:
    create_markdown_artifact(key="ingest-validation-failure", markdown=report.as_markdown(), description=description)
    raise BatchValidationError(report)


@ingest_task
def check_unique_ids(path: Path, fmt: Format) -> int:
    """Before any batch is written: ids repeat nowhere in the whole input (whatever the batch size)."""
    entries = scan_ids(path, fmt)
    report = validate_unique_ids(entries)
    if not report.success:
        _refuse(report, "ids repeated within the input; nothing from this run was written")
    return len(entries)


@ingest_task
def validate_batch(batch: BatchInFlight, max_record_bytes: int, run_started: datetime) -> BatchInFlight:
    report = validate_rows(batch.rows, max_record_bytes=max_record_bytes, run_started=run_started)
    if not report.success:
        _refuse(report, f"batch {batch.number}: rows that failed validation; nothing was written")
    batch.records = to_records(batch.rows)
    return batch


@ingest_task
def skip_stored(settings: Settings, batch: BatchInFlight) -> BatchInFlight:
    """Content already stored is not chunked or embedded again."""
    known = documents.known_versions(shared_database(settings), batch.records)
    batch.new_records = [r for r in batch.records if (r.source.name, r.external_id, r.content_hash) not in known]
    return batch


@ingest_task
def chunk_batch(batch: BatchInFlight, options: ChunkingOptions) -> BatchInFlight:
    batch.prepared = ingestion.plan_chunks(batch.new_records, options)
    return batch


@ingest_task
def embed_batch(settings: Settings, batch: BatchInFlight) -> BatchInFlight:
    batch.prepared = ingestion.embed_chunks(batch.prepared, embedder_for(settings))
    return batch


@task(cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=2)
def write_batch(settings: Settings, batch: BatchInFlight, run_id: str | None) -> WriteResult:
    # Safe to retry: a batch commits whole or not at all, and stored content is skipped.
    return documents.write_batch(shared_database(settings), batch.records, batch.prepared, run_id=run_id)


@ingest_task
def begin_load(settings: Settings, input_bytes: int, index_mode: str) -> dict:
    """Register the embedder; for a bulk load, drop its HNSW index so it is built once at the end."""
    model = embedder_for(settings)
    state = documents.register_embedder(shared_database(settings), model.name, model.engine, model.version, model.dim)
    # ~1 chunk per kB of input: rebuild when the input could at least double what is stored (a
    # re-run of the same corpus stays incremental and adds nothing).
    bulk = index_mode == "rebuild" or (index_mode == "auto" and input_bytes // 1000 >= 2 * state["vectors"])
    if bulk and state["indexed"]:
        documents.drop_embedding_index(shared_database(settings), state["model_id"])
    return {**state, "bulk": bulk, "embedder": model.name, "engine": model.engine, "version": model.version}


@ingest_task
def build_index(settings: Settings, model_id: int) -> float:
    start = time.perf_counter()
    documents.ensure_embedding_index(shared_database(settings), model_id)
    return time.perf_counter() - start


@ingest_task
def compact_postings(settings: Settings) -> documents.Compaction:
    return documents.compact_bm25_postings(shared_database(settings))


@ingest_task
def record_run_finished(settings: Settings, summary: dict, run_id: str | None) -> int:
    """The run's summary as an INGEST_RUN_FINISHED event in the audit log."""
    with shared_database(settings).transaction() as conn:
        return record_event(conn, "INGEST_RUN_FINISHED", summary, run_id=run_id)
