"""Ingestion tasks: load → validate → skip stored → prepare (chunk → embed) → write, plus the indexes
after a load (HNSW build, BM25 posting compaction).

Each batch task takes and returns the same `BatchInFlight`, filling in its next stage.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.task_runners import ThreadPoolTaskRunner

from forum_atlas.config import Settings
from forum_atlas.embeddings import embedder_for
from forum_atlas.embeddings.base import stats_of
from forum_atlas.ingestion import preparation
from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.ingestion.preparation import BatchInFlight, CommitLog, InputCheck, WriteResult
from forum_atlas.ingestion.progress import IngestWatcher
from forum_atlas.ingestion.records import (
    DocumentOptions,
    Format,
    SourceInfo,
    check_stated_sources,
    complete_source,
    default_source_name,
    load_documents,
    load_rows,
    scan_input,
    source_conflict,
    to_records,
)
from forum_atlas.ingestion.validation import (
    BatchValidationError,
    InputValidation,
    ValidationReport,
    validate_rows,
    validate_unique_ids,
)
from forum_atlas.store import documents
from forum_atlas.store.db import is_transient, record_event, shared_database

# Batches are large, short-lived values: never hash or persist them.
ingest_task = task(cache_policy=NO_CACHE, persist_result=False)


def batch_task(name: str, **options: object):
    """A task that handles one batch: its runs are named after it (validate-batch-12), not numbered."""
    return task(name=name, task_run_name=f"{name}-{{batch.number}}", cache_policy=NO_CACHE, persist_result=False,
                **options)


def _transient(task: object, task_run: object, state: State) -> bool:
    """Retry a write only for what a retry can fix (a lost connection, a deadlock), not refused input."""
    return is_transient(state.result(raise_on_failure=False))


def _refuse(report: ValidationReport, description: str) -> None:
    create_markdown_artifact(key="ingest-validation-failure", markdown=report.as_markdown(), description=description)
    raise BatchValidationError(report)


@task(name="document-source", task_run_name="document-source", cache_policy=NO_CACHE, persist_result=False)
def document_source(settings: Settings, path: Path, stated: dict) -> tuple[SourceInfo, list[str]]:
    """The source of a folder's (or a document file's) documents, what the run did not state filled in: see
    `complete_source`. Returns it and the fields that took a default."""
    name = stated.get("name") or default_source_name(path)
    return complete_source(path, stated, documents.stored_source(shared_database(settings), name))


@task(name="check-input", task_run_name="check-input", cache_policy=NO_CACHE, persist_result=False)
def check_input(settings: Settings, path: Path, fmt: Format, source: SourceInfo | None, max_record_bytes: int,
                run_started: datetime) -> InputCheck:
    """Before any batch is chunked, embedded or written, what would otherwise fail the run after minutes of
    that work, or after some batches are stored: every JSONL/BEIR row passes validation (the batch suite, read
    in one streaming pass), the input reads whole, its ids repeat nowhere (whatever the batch size), the
    sources it names agree with one another and with the stored ones (sector included), and the embedder is
    set up (its API key present). The same pass measures how much of the input's content is new, for the
    index plan (`begin_load`). A folder's documents are read, and validated, by their batch."""
    db = shared_database(settings)
    rows = InputValidation(max_record_bytes=max_record_bytes, run_started=run_started)
    new_bytes = 0

    def check_part(part: list[dict]) -> None:
        nonlocal new_bytes
        if rows.check(part):
            records = to_records(part)
            known = documents.known_versions(db, records)
            new_bytes += sum(len(r.title.encode()) + len(r.text.encode()) for r in records
                             if (r.source.name, r.external_id, r.content_hash) not in known)

    scan = scan_input(path, fmt, source, check_rows=check_part)
    for report, description in ((validate_unique_ids(scan.ids), "ids repeated within the input"),
                                (rows.report(), "rows that failed validation")):
        if not report.success:
            _refuse(report, f"{description}; nothing from this run was written")
    check_stated_sources(documents.stored_sources(db, list(scan.sources)), scan.sources)
    embedder_for(settings)
    return InputCheck(scan.stamp, None if fmt == "folder" else new_bytes)


@batch_task("load-batch")
def load_batch(batch: BatchInFlight, source: SourceInfo | None, documents: DocumentOptions = DocumentOptions(),
               on_page: Callable[[int], None] | None = None) -> BatchInFlight:
    """JSONL lines into records (check-input validated every row before the first batch); files into rows
    and a typed outcome per file (a bad file yields no row), validated by `validate_batch`."""
    if batch.raw.fmt == "folder":
        batch.rows, batch.files = load_documents(batch.raw, source, documents, on_page)
    else:
        batch.records = to_records(load_rows(batch.raw, source))
    return batch


@batch_task("validate-batch")
def validate_batch(batch: BatchInFlight, max_record_bytes: int, run_started: datetime) -> BatchInFlight:
    """A batch of documents: the rows read from its files (a JSONL row is validated by check-input)."""
    report = validate_rows(batch.rows, max_record_bytes=max_record_bytes, run_started=run_started)
    if not report.success:
        _refuse(report, f"batch {batch.number}: rows that failed validation; nothing was written")
    batch.records = to_records(batch.rows)
    return batch


@batch_task("skip-stored")
def skip_stored(settings: Settings, batch: BatchInFlight) -> BatchInFlight:
    """Content already stored is not chunked again; its chunks are embedded only if this embedder has
    not embedded them yet (a re-ingest with a new embedder)."""
    db = shared_database(settings)
    known = documents.known_versions(db, batch.records)
    batch.new_records = [r for r in batch.records if (r.source.name, r.external_id, r.content_hash) not in known]
    stored = [r for r in batch.records if (r.source.name, r.external_id, r.content_hash) in known]
    batch.stored_chunks = preparation.stored_chunks(
        documents.chunks_without_vectors(db, stored, embedder_for(settings).name))
    return batch


@batch_task("prepare-batch")
def prepare_batch(settings: Settings, batch: BatchInFlight, options: ChunkingOptions,
                  watcher: IngestWatcher | None = None) -> BatchInFlight:
    """Chunk the new records, then embed them and the stored chunks new to this embedder: the batch's CPU
    work, pure, one task so that a Dask worker takes a batch whole (no hop between the two steps). A watcher
    (in-process runs only) is told the chunks planned, then embedded as the embedder goes."""
    planned = preparation.plan_chunks(batch.new_records, options, batch.stored_chunks)
    if watcher:
        watcher.chunks_planned(planned.chunk_count + len(planned.stored_chunks))
    batch.prepared = preparation.embed_chunks(planned, embedder_for(settings),
                                              watcher.chunks_embedded if watcher else None)
    return batch


@ingest_task
def embedder_stats(settings: Settings) -> dict | None:
    """The embedder's cumulative timings in this process (None if it keeps none): the run's model share."""
    return stats_of(embedder_for(settings))


@batch_task("write-batch", retries=2, retry_delay_seconds=2, retry_condition_fn=_transient)
def write_batch(settings: Settings, batch: BatchInFlight, run_id: str | None) -> WriteResult:
    # Safe to retry: a batch commits whole or not at all, and stored content is skipped.
    return documents.write_batch(shared_database(settings), batch.records, batch.prepared, source_conflict,
                                 run_id=run_id)


@ingest_task
def begin_load(settings: Settings, new_bytes: int, index_mode: str, options: ChunkingOptions) -> dict:
    """Register the embedder; when rebuilding its HNSW index after the load is cheaper than inserting into it
    (`rebuild_is_cheaper`, on the chunks `new_bytes` of new content make), drop it so it is built once at the
    end. A re-run of stored content adds nothing and keeps the index."""
    model = embedder_for(settings)
    state = documents.register_embedder(shared_database(settings), model.name, model.engine, model.version, model.dim)
    bulk = index_mode == "rebuild" or (
        index_mode == "auto" and preparation.rebuild_is_cheaper(state["vectors"], preparation.expected_chunks(new_bytes, options)))
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


class OrderedWrites:
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


def report_failure(exc: Exception, writes: OrderedWrites) -> Exception:
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
