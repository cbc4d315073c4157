"""Ingest flow: sources → documents → chunks → embeddings → PostgreSQL (ING-1…6).

Per batch: load → (documents: validate) → skip stored content → prepare (chunk → embed) → write; after the
batches, the HNSW index is built and the BM25 posting blocks the batches added are merged. Batches
stream, so memory does not grow with the corpus. The prepare step is submitted to the flow's task
runner — threads by default, or a Dask cluster (`forum_atlas.blocks.task_runners`) whose workers prepare
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
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.context import FlowRunContext
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field, SecretStr

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.blocks.task_runners import describe, in_process, parallel_slots, task_runner_from_env
from forum_atlas.chunking import ChunkingOptions
from forum_atlas.config import EMBEDDER_NAMES, Settings
from forum_atlas.documents import DEFAULT_MAX_FILE_BYTES
from forum_atlas.embeddings.base import embed_report
from forum_atlas.ingestion import BatchInFlight, CommitLog
from forum_atlas.records import DocumentOptions, FileOutcome, InputError, SourceInfo, detect_format, iter_raw
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.ingest import (
    begin_load,
    build_index,
    check_input,
    compact_postings,
    embedder_stats,
    load_batch,
    prepare_batch,
    record_run_finished,
    skip_stored,
    validate_batch,
    write_batch,
)
from forum_atlas.validation import warm_up_in_background

# great-expectations' import costs 4–5 s once per process: start it while the process waits for
# Prefect to set the run up (the CLI: for its server to start), not inside the first validation.
warm_up_in_background()


class SourceParams(BaseModel):
    """The source of a folder of files (JSONL rows carry their own; BEIR defaults to SciFact's)."""

    name: str = Field(min_length=1, description="the source's name (sources are matched by name)")
    importance: int = Field(ge=1, le=5, description="5 = canonical, 1 = supplemental")
    quality_score: int = Field(ge=1, le=5, description="5 = highest editorial quality, 1 = lowest")
    licence: str = Field(min_length=1, description="licence of the texts, e.g. CC-BY-4.0")
    url: str | None = Field(default=None, description="the source's home page")
    sector: str | None = Field(default=None, description="retrieval filter sector; empty = \"general\" for a new "
                                                         "source, its own for a known one")


# A deployment picks Dask through the flow-run process's environment; the CLI and tests use `with_options`.
@flow(name="ingest", log_prints=True, task_runner=task_runner_from_env())
def ingest(
    path: str,
    format: Literal["auto", "jsonl", "folder", "beir"] = "auto",
    source: SourceParams | None = None,
    batch_size: Annotated[int, Field(ge=1, le=50_000)] = 1000,
    chunk_chars: Annotated[int, Field(ge=50, le=100_000)] = 1200,
    overlap_chars: Annotated[int, Field(ge=0, le=50_000)] = 200,
    embedder: Literal[EMBEDDER_NAMES] | None = None,
    index_mode: Literal["auto", "incremental", "rebuild"] = "auto",
    database_block: AtlasDatabase | None = None,
    providers_block: AtlasProviders | None = None,
    progress_bar: bool = False,
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
        source: the source of a folder's files (JSONL rows carry their own)
        batch_size: rows per validated, atomic write
        chunk_chars: largest chunk, in characters
        overlap_chars: whole sentences repeated between chunks, at most this long
        embedder: empty uses ATLAS_EMBEDDER or the providers block
        index_mode: auto rebuilds the HNSW index after the load when that costs less than inserting the
            load's new vectors into it (a build over all, against ~8x per vector for inserts)
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment
        providers_block: the Forum Atlas Providers block (embedder, API keys); empty = the worker's environment
        progress_bar: a terminal progress bar (the CLI's)
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
    source_info = SourceInfo(**source.model_dump()) if source else None
    document_options = DocumentOptions(
        pdf_password=pdf_password.get_secret_value() if pdf_password else None, max_file_bytes=max_file_bytes,
        max_record_bytes=settings.max_record_bytes, url=document_url)
    total_bytes = sum(p.stat().st_size for p in input_path.rglob("*") if p.is_file()) if input_path.is_dir() else input_path.stat().st_size

    run_id = flow_run_id()
    checked = check_input(settings, input_path, fmt, source_info, settings.max_record_bytes, run_started)
    model = begin_load(settings, total_bytes if checked.new_bytes is None else checked.new_bytes, index_mode, options)
    embed_stats_start = embedder_stats(settings)
    progress_id = create_progress_artifact(progress=0.0, key="ingest-progress", description=f"ingesting {input_path.name}")
    bar = _ProgressBar(total_bytes) if progress_bar else None

    runner = FlowRunContext.get().task_runner
    log, rows_seen, files = CommitLog(input_path.name), 0, []
    writes = _OrderedWrites(settings, run_id, log, ahead=parallel_slots(runner))
    try:
        for number, raw in enumerate(iter_raw(input_path, fmt, batch_size=batch_size, stamp=checked.stamp), start=1):
            writes.reading(number, raw)
            batch = load_batch(BatchInFlight(number, raw), source_info, document_options, bar.page if bar else None)
            if fmt == "folder":   # documents are read by their batch, and validated there
                batch = validate_batch(batch, settings.max_record_bytes, run_started)
            batch = skip_stored(settings, batch)
            rows_seen += len(batch.records)
            files += _file_outcomes(batch)
            writes.add(number, raw, prepare_batch.submit(settings, batch, options))
            update_progress_artifact(progress_id, progress=100.0 * raw.bytes_read / max(total_bytes, 1))
            if bar:
                bar.advance(raw.bytes_read, len(files))
        writes.finish()
    except Exception as exc:
        failure = _report_failure(exc, writes)
        if failure is exc:
            raise
        raise failure from None   # an earlier batch failed: as in a single-process run, its failure is the run's
    finally:
        writes.close()
        if bar:
            bar.close()
        # A bulk load dropped the index: even a failed run leaves its committed batches indexed.
        index_seconds = build_index(settings, model["model_id"])
        compaction = compact_postings(settings)

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


class _OrderedWrites:
    """Prepared batches written in input order by one writer thread, one transaction each, while up to
    `ahead` more batches are prepared on the flow's task runner. Keeps the `CommitLog` and which batch
    the run is at, so that a failure names the batch it belongs to."""

    def __init__(self, settings: Settings, run_id: str | None, log: CommitLog, ahead: int):
        self.settings, self.run_id, self.log, self.ahead = settings, run_id, log, ahead
        self.at: tuple[int, object] = (1, None)   # (number, raw batch) of the batch the run is working on
        self._prepared: deque = deque()         # (number, raw, future of the prepared batch), input order
        self._writing: tuple | None = None      # (the batch, future of its write)
        self._writer = ThreadPoolTaskRunner(max_workers=1).__enter__()

    def reading(self, number: int, raw: object) -> None:
        self.at = (number, raw)

    def add(self, number: int, raw: object, prepared) -> None:
        self._prepared.append((number, raw, prepared))
        while len(self._prepared) > self.ahead:
            self._write_oldest()
        self.at = (number + 1, None)   # reading the next batch may fail before it has a raw batch

    def finish(self) -> None:
        """Write every batch still being prepared, then wait for the last write."""
        while self._prepared:
            self._write_oldest()
        self._settle()

    def _write_oldest(self) -> None:
        number, raw, prepared = self._prepared.popleft()
        try:
            self._settle()   # one write in flight: batch n commits before batch n+1 starts
            self.at = (number, raw)
            batch = prepared.result()
        except BaseException:
            # A batch failed: none after it may be written. Their prepare tasks are let finish, so the
            # failed run shows no task as still running.
            for later in (prepared, *(future for _, _, future in self._prepared)):
                later.wait()
            self._prepared.clear()
            raise
        self._writing = (batch, self._writer.submit(
            write_batch, {"settings": self.settings, "batch": batch, "run_id": self.run_id}))

    def _settle(self) -> None:
        if self._writing is not None:
            batch, write = self._writing
            self._writing, self.at = None, (batch.number, batch.raw)
            self.log.committed(batch.raw, write.result())
            batch.release()

    def close(self) -> None:
        """Wait for a write still in flight (stopping the writer would cancel it), then stop the writer."""
        if self._writing is not None:
            self._writing[1].wait()
        self._writer.__exit__(None, None, None)


def _report_failure(exc: Exception, writes: _OrderedWrites) -> Exception:
    """Write the batches read before the failing one (as a single-process run would have, before reading
    on), then attach to the failure (as a note) and publish (as an artifact) what the run committed.
    Returns the run's failure: `exc`, or an earlier batch's if one of those fails first."""
    failed_at = writes.at
    try:
        writes.finish()
    except Exception as earlier:   # noqa: BLE001 — that batch comes first in input order
        exc, failed_at = earlier, writes.at
    note = writes.log.failure_note(*failed_at)
    exc.add_note(note)
    create_markdown_artifact(key="ingest-failure", markdown=f"**{type(exc).__name__}**: {exc}\n\n{note}",
                             description="what the failed ingest run committed")
    return exc


class _ProgressBar:
    """A terminal progress bar over input bytes, with the files and pages read so far (the CLI asks for it)."""

    def __init__(self, total: int):
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self._progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                  "{task.fields[read]}", TimeRemainingColumn())
        self._task = self._progress.add_task("ingesting", total=total, read="")
        self._files, self._pages = 0, 0
        self._progress.start()

    def page(self, number: int) -> None:
        """A document's page `number` was read (called by the reader as it goes)."""
        self._pages += 1
        self._show()

    def advance(self, done: int, files: int) -> None:
        self._files = files
        self._progress.update(self._task, completed=done)
        self._show()

    def _show(self) -> None:
        if self._files or self._pages:
            self._progress.update(self._task, read=f"{self._files} files, {self._pages} pages")

    def close(self) -> None:
        self._progress.stop()
