"""Ingest flow: sources → documents → chunks → embeddings → PostgreSQL (ING-1…6).

Per batch: load → validate → (skip stored content) → chunk → embed → write; after the batches, the
HNSW index is built and the BM25 posting blocks the batches added are merged. Batches stream, so
memory does not grow with the corpus; each write is one transaction, submitted so that the database
writes batch n while Python prepares batch n+1. A failing batch writes nothing and stops the run;
a re-run skips what earlier runs stored. Before the first batch, the ids of the whole input are
checked for repeats, so the outcome never depends on `batch_size`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from prefect import flow
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.chunking import ChunkingOptions
from forum_atlas.ingestion import BatchInFlight, WriteResult
from forum_atlas.records import InputError, SourceInfo, detect_format, iter_raw
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.ingest import (
    begin_load,
    build_index,
    check_unique_ids,
    chunk_batch,
    compact_postings,
    embed_batch,
    load_batch,
    record_run_finished,
    skip_stored,
    validate_batch,
    write_batch,
)


class SourceParams(BaseModel):
    """The source of a folder of files (JSONL rows carry their own; BEIR defaults to SciFact's)."""

    name: str
    importance: int = Field(ge=1, le=5, description="5 = canonical, 1 = supplemental")
    quality_score: int = Field(ge=1, le=5)
    licence: str
    url: str | None = None
    sector: str = "general"


@flow(name="ingest", log_prints=True)
def ingest(
    path: str,
    format: Literal["auto", "jsonl", "folder", "beir"] = "auto",
    source: SourceParams | None = None,
    batch_size: Annotated[int, Field(ge=1, le=50_000)] = 1000,
    chunk_chars: Annotated[int, Field(ge=50)] = 1200,
    overlap_chars: Annotated[int, Field(ge=0)] = 200,
    embedder: Literal["hashed", "minilm", "voyage", "openai"] | None = None,
    index_mode: Literal["auto", "incremental", "rebuild"] = "auto",
    database_block: str | None = None,
    providers_block: str | None = None,
    progress_bar: bool = False,
    max_record_bytes: Annotated[int, Field(ge=1)] | None = None,
) -> dict:
    """`max_record_bytes` (default: ATLAS_MAX_RECORD_BYTES, else 5 MiB) caps the UTF-8 bytes of one
    record's title + text; larger records fail validation with their file:line."""
    started = time.perf_counter()
    run_started = datetime.now(UTC)   # anchors the future-date tolerance for every batch
    settings = resolve_settings(database_block, providers_block).with_overrides(
        embedder=embedder, max_record_bytes=max_record_bytes)
    options = ChunkingOptions(max_chars=chunk_chars, overlap_chars=overlap_chars)
    input_path = Path(path)
    if not input_path.exists():
        raise InputError(f"{input_path}: no such file or folder")
    fmt = detect_format(input_path) if format == "auto" else format
    source_info = SourceInfo(**source.model_dump()) if source else None
    total_bytes = sum(p.stat().st_size for p in input_path.rglob("*") if p.is_file()) if input_path.is_dir() else input_path.stat().st_size

    run_id = flow_run_id()
    check_unique_ids(input_path, fmt)
    model = begin_load(settings, total_bytes, index_mode)
    progress_id = create_progress_artifact(progress=0.0, key="ingest-progress", description=f"ingesting {input_path.name}")
    bar = _ProgressBar(total_bytes) if progress_bar else None

    totals, rows_seen, pending = WriteResult(), 0, None
    try:
        for number, raw in enumerate(iter_raw(input_path, fmt, batch_size=batch_size), start=1):
            batch = validate_batch(load_batch(BatchInFlight(number, raw), source_info), settings.max_record_bytes, run_started)
            batch = embed_batch(settings, chunk_batch(skip_stored(settings, batch), options))
            rows_seen += len(batch.rows)
            if pending is not None:
                totals += pending.result()
            pending = write_batch.submit(settings, batch, run_id)
            update_progress_artifact(progress_id, progress=100.0 * raw.bytes_read / max(total_bytes, 1))
            if bar:
                bar.advance(raw.bytes_read)
        if pending is not None:
            totals += pending.result()
            pending = None
    finally:
        if pending is not None:
            pending.wait()
        if bar:
            bar.close()
        # A bulk load dropped the index: even a failed run leaves its committed batches indexed.
        index_seconds = build_index(settings, model["model_id"])
        compaction = compact_postings(settings)

    elapsed = time.perf_counter() - started
    summary = {
        "input": str(input_path), "format": fmt, "rows": rows_seen,
        "documents_added": totals.documents_added, "chunks_added": totals.chunks_added,
        "embeddings_added": totals.embeddings_added, "status_changes": totals.status_changes,
        "embedder": model["embedder"], "embedder_engine": model["engine"], "embedder_version": model["version"],
        "index_mode": "rebuild" if model["bulk"] else "incremental", "index_seconds": round(index_seconds, 2),
        "bm25_blocks_merged": compaction.blocks_merged, "bm25_compaction_seconds": round(compaction.seconds, 2),
        "seconds": round(elapsed, 2), "chunks_per_second": round(totals.chunks_added / elapsed, 1) if elapsed else 0.0,
    }
    record_run_finished(settings, summary, run_id)
    create_table_artifact(key="ingest-summary", table=[{"measure": k, "value": str(v)} for k, v in summary.items()],
                          description="what this ingest run stored")
    update_progress_artifact(progress_id, progress=100.0)
    print(f"ingested {rows_seen} rows: +{totals.documents_added} documents, +{totals.chunks_added} chunks "
          f"({summary['chunks_per_second']} chunks/s), {totals.status_changes} status changes")
    return summary


class _ProgressBar:
    """A terminal progress bar over input bytes (the CLI asks for it)."""

    def __init__(self, total: int):
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self._progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TimeRemainingColumn())
        self._task = self._progress.add_task("ingesting", total=total)
        self._progress.start()

    def advance(self, done: int) -> None:
        self._progress.update(self._task, completed=done)

    def close(self) -> None:
        self._progress.stop()
