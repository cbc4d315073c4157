"""Ingest flow: sources → documents → chunks → embeddings → PostgreSQL (ING-1…6).

Per batch: load → (documents: validate) → skip stored content → prepare (chunk → embed) → write; after the
batches, the HNSW index is built and the BM25 posting blocks the batches added are merged. Batches
stream, so memory does not grow with the corpus. The prepare step is submitted to the flow's task
runner — threads by default, or a Dask cluster (`forum_atlas.runtime.task_runners`) whose workers prepare
several batches at once — while one writer thread of this process, the only one holding database
connections, writes them in input order, one transaction each, the database writing batch n while
batch n+1 is prepared. A failing batch writes nothing and stops the run (the batches read before it
are written first, so the database ends as a single-process run leaves it); a re-run skips what earlier
runs stored. Before the first batch, the whole input is read once, streaming (`check_input`): a JSONL or BEIR
row that fails validation (so a bad last row of 50,000 writes nothing), repeated ids (so the outcome never
depends on `batch_size`), unreadable lines, sources that disagree with each other or with the stored ones and
a missing embedder key fail the run there, before any chunking, embedding or writing. A file changed after that
check fails the run at the next batch it reads. Documents (a folder) are read, and validated, by their batch.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.context import FlowRunContext
from pydantic import BaseModel, Field, SecretStr

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.config import EMBEDDER_NAMES
from forum_atlas.embeddings.base import embed_report
from forum_atlas.ingestion import progress as ingest_progress
from forum_atlas.ingestion.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS, ChunkingOptions
from forum_atlas.ingestion.documents import DEFAULT_MAX_FILE_BYTES
from forum_atlas.ingestion.preparation import BatchInFlight, CommitLog
from forum_atlas.ingestion.records import DocumentOptions, FileOutcome, InputError, SourceInfo, detect_format, iter_raw
from forum_atlas.ingestion.validation import warm_up_in_background
from forum_atlas.run_names import ingest_run_name
from forum_atlas.runtime.task_runners import describe, in_process, parallel_slots, task_runner_from_env
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.ingest import (
    OrderedWrites,
    begin_load,
    build_index,
    check_input,
    compact_postings,
    document_source,
    embedder_stats,
    load_batch,
    prepare_batch,
    record_run_finished,
    report_failure,
    skip_stored,
    validate_batch,
)

# great-expectations' import costs 4–5 s once per process: start it while the process waits for
# Prefect to set the run up (the CLI: for its server to start), not inside the first validation.
warm_up_in_background()


class SourceParams(BaseModel):
    """The source of a folder of files (JSONL rows carry their own; BEIR defaults to SciFact's). For documents,
    what is left empty is filled in: the name from the folder, the rest from the stored source of that name, else
    importance 3, quality 3, licence "unknown" (`complete_source`)."""

    name: str | None = Field(default=None, min_length=1, description="the source's name (sources are matched by "
                                                                     "name); empty = the folder's name")
    importance: int | None = Field(default=None, ge=1, le=5, description="5 = canonical, 1 = supplemental; "
                                                                         "empty = 3 for a new source")
    quality_score: int | None = Field(default=None, ge=1, le=5, description="5 = highest editorial quality, 1 = "
                                                                           "lowest; empty = 3 for a new source")
    licence: str | None = Field(default=None, min_length=1, description="licence of the texts, e.g. CC-BY-4.0; "
                                                                       "empty = \"unknown\" for a new source")
    url: str | None = Field(default=None, description="the source's home page")
    sector: str | None = Field(default=None, description="retrieval filter sector; empty = \"general\" for a new "
                                                         "source, its own for a known one")


def _run_name() -> str:
    from prefect.runtime import flow_run

    parameters = flow_run.parameters
    source = parameters.get("source")
    name = source.get("name") if isinstance(source, dict) else getattr(source, "name", None)
    return ingest_run_name(str(parameters.get("path", "")), name)


# A deployment picks Dask through the flow-run process's environment; the CLI and tests use `with_options`.
@flow(name="ingest", flow_run_name=_run_name, log_prints=True, task_runner=task_runner_from_env())
def ingest(
    path: str,
    format: Literal["auto", "jsonl", "folder", "beir"] = "auto",
    source: SourceParams | None = None,
    batch_size: Annotated[int, Field(ge=1, le=50_000)] = 1000,
    chunk_chars: Annotated[int, Field(ge=50, le=100_000)] = DEFAULT_CHUNK_CHARS,
    overlap_chars: Annotated[int, Field(ge=0, le=50_000)] = DEFAULT_OVERLAP_CHARS,
    embedder: Literal[EMBEDDER_NAMES] | None = None,
    index_mode: Literal["auto", "incremental", "rebuild"] = "auto",
    database_block: AtlasDatabase | None = None,
    providers_block: AtlasProviders | None = None,
    max_record_bytes: Annotated[int, Field(ge=1)] | None = None,
    pdf_password: SecretStr | None = None,
    max_file_bytes: Annotated[int, Field(ge=1)] = DEFAULT_MAX_FILE_BYTES,
    document_url: str | None = None,
) -> dict:
    """Ingest a corpus into PostgreSQL (the run form shows these descriptions).

    Args:
        path: a JSONL file, a BEIR corpus.jsonl, or documents: a folder (read recursively) or one file of
            PDF, HTML, DOCX, Markdown or text, each recognised by its content
        format: auto detects it from the path (folder: documents)
        source: the source of a folder's files (JSONL rows carry their own); empty fields are filled in
        batch_size: rows per validated, atomic write
        chunk_chars: largest chunk, in characters
        overlap_chars: whole sentences repeated between chunks, at most this long
        embedder: empty uses ATLAS_EMBEDDER or the providers block
        index_mode: auto rebuilds the HNSW index after the load when that costs less than inserting the
            load's new vectors into it (a build over all, against ~8x per vector for inserts)
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment
        providers_block: the Forum Atlas Providers block (embedder, API keys); empty = the worker's environment
        max_record_bytes: largest record in UTF-8 bytes of title + text (empty: ATLAS_MAX_RECORD_BYTES,
            else 5 MiB); a larger one fails validation with its file:line (a document: that file fails alone)
        pdf_password: opens encrypted PDFs (an encrypted PDF without it fails alone, as "encrypted")
        max_file_bytes: a larger document file fails alone, as "too_large"
        document_url: the source URL of a single document file (default: its path)
    """
    started = time.perf_counter()
    run_started = datetime.now(UTC)   # anchors the future-date tolerance for every batch
    settings = resolve_settings(database_block, providers_block).with_overrides(
        embedder=embedder, max_record_bytes=max_record_bytes)
    options = ChunkingOptions(max_chars=chunk_chars, overlap_chars=overlap_chars)
    input_path = Path(path)
    if not input_path.exists():
        raise InputError(f"{input_path}: no such file or folder")
    fmt = detect_format(input_path) if format == "auto" else format
    if fmt == "folder":
        source_info, defaulted = document_source(settings, input_path, source.model_dump() if source else {})
        if defaulted:
            get_run_logger().info(f"source {source_info.name!r}: defaults for {', '.join(defaulted)}")
    else:
        source_info = SourceInfo(**source.model_dump()) if source else None
    document_options = DocumentOptions(
        pdf_password=pdf_password.get_secret_value() if pdf_password else None, max_file_bytes=max_file_bytes,
        max_record_bytes=settings.max_record_bytes, url=document_url)
    total_bytes = sum(p.stat().st_size for p in input_path.rglob("*") if p.is_file()) if input_path.is_dir() else input_path.stat().st_size

    run_id = flow_run_id()
    # through the module: a ContextVar among the flow function's globals would make it unpicklable for Dask
    watcher = ingest_progress.ingest_watcher.get()
    runner = FlowRunContext.get().task_runner
    # Dask workers run in other processes: the watcher of this one cannot travel there
    embed_watcher = watcher if in_process(runner) else None
    if watcher:
        watcher.stage("checking the input")
    checked = check_input(settings, input_path, fmt, source_info, settings.max_record_bytes, run_started)
    model = begin_load(settings, total_bytes if checked.new_bytes is None else checked.new_bytes, index_mode, options)
    embed_stats_start = embedder_stats(settings)
    progress_id = create_progress_artifact(progress=0.0, key="ingest-progress", description=f"ingesting {input_path.name}")
    if watcher:
        watcher.stage(f"reading, chunking and embedding with {model['embedder']}")
        watcher.start(total_bytes)

    log, rows_seen, files = CommitLog(input_path.name), 0, []
    writes = OrderedWrites(settings, run_id, log, ahead=parallel_slots(runner))
    try:
        for number, raw in enumerate(iter_raw(input_path, fmt, batch_size=batch_size, stamp=checked.stamp), start=1):
            writes.reading(number, raw)
            batch = load_batch(BatchInFlight(number, raw), source_info, document_options, watcher.page if watcher else None)
            if fmt == "folder":   # documents are read by their batch, and validated there
                batch = validate_batch(batch, settings.max_record_bytes, run_started)
            batch = skip_stored(settings, batch)
            rows_seen += len(batch.records)
            files += _file_outcomes(batch)
            writes.add(number, raw, prepare_batch.submit(settings, batch, options, embed_watcher))
            update_progress_artifact(progress_id, progress=100.0 * raw.bytes_read / max(total_bytes, 1))
            if watcher:
                watcher.advance(raw.bytes_read, len(files))
        writes.finish()
    except Exception as exc:
        failure = report_failure(exc, writes)
        if failure is exc:
            raise
        raise failure from None   # an earlier batch failed: as in a single-process run, its failure is the run's
    finally:
        writes.close()
        try:
            # A bulk load dropped the index: even a failed run leaves its committed batches indexed.
            if watcher:
                watcher.stage("building the vector index")
            index_seconds = build_index(settings, model["model_id"])
            if watcher:
                watcher.stage("merging the BM25 postings")
            compaction = compact_postings(settings)
        finally:
            if watcher:
                watcher.close()

    elapsed = time.perf_counter() - started
    summary = {
        "input": str(input_path), "format": fmt, "rows": rows_seen,
        "documents_added": log.totals.documents_added, "chunks_added": log.totals.chunks_added,
        "embeddings_added": log.totals.embeddings_added, "status_changes": log.totals.status_changes,
        "stored_chunks_embedded": log.totals.stored_chunks_embedded,
        "embedder": model["embedder"], "embedder_engine": model["engine"], "embedder_version": model["version"],
        "index_mode": "rebuild" if model["bulk"] else "incremental", "index_seconds": round(index_seconds, 2),
        "bm25_blocks_merged": compaction.blocks_merged, "bm25_compaction_seconds": round(compaction.seconds, 2),
        "seconds": round(elapsed, 2), "chunks_per_second": round(log.totals.chunks_added / elapsed, 1) if elapsed else 0.0,
        "task_runner": describe(runner),
    }
    if fmt == "folder":
        summary.update(_files_summary(files))
    if in_process(runner):   # on Dask the embedder ran in the workers, whose timings stay there
        summary.update(embed_report(embed_stats_start, embedder_stats(settings), elapsed))
    record_run_finished(settings, summary, run_id)
    create_table_artifact(key="ingest-summary", table=[{"measure": k, "value": str(v)} for k, v in summary.items()],
                          description="what this ingest run stored")
    if files:
        create_table_artifact(key="ingest-files", table=[f.__dict__ for f in files],
                              description="every input file and what became of it")
    update_progress_artifact(progress_id, progress=100.0)
    print(f"ingested {rows_seen} rows: +{log.totals.documents_added} documents, +{log.totals.chunks_added} chunks "
          f"({summary['chunks_per_second']} chunks/s), {log.totals.status_changes} status changes"
          + (f"; embedded {log.totals.stored_chunks_embedded} stored chunks that {model['embedder']} had not embedded"
             if log.totals.stored_chunks_embedded else ""))
    return summary


def _file_outcomes(batch: BatchInFlight) -> list[FileOutcome]:
    """Each file of a batch of documents: stored (new content), unchanged (stored before), or its failure."""
    new = {r.external_id for r in batch.new_records}
    return [FileOutcome(f.file, "stored" if f.file in new else "unchanged", f.detail, f.pages, f.reader)
            if f.outcome == "read" else f for f in batch.files]


def _files_summary(files: list[FileOutcome]) -> dict:
    """Counts for the summary; each file's outcome goes to the run's log (the CLI prints them as a table)."""
    failed = [f for f in files if f.failed]
    logger = get_run_logger()
    for f in files:
        logger.info(f"{f.outcome:>14}  {f.file}" + (f" ({f.pages} pages)" if f.pages else "") + (f": {f.detail}" if f.detail else ""))
    return {"files": len(files), "files_stored": sum(f.outcome == "stored" for f in files),
            "files_unchanged": sum(f.outcome == "unchanged" for f in files), "files_failed": len(failed),
            "pages": sum(f.pages or 0 for f in files),
            "file_outcomes": [{"file": f.file, "outcome": f.outcome, "detail": f.detail} for f in files]}
