"""`atlas ingest PATH`: run the ingestion flow on a JSONL file, a BEIR corpus, or documents (a folder of PDF, HTML,
DOCX, Markdown and text files, or one such file).

Exit status: 0 when everything was stored (or was already), SOME_FILES_FAILED when the run finished but some
files could not be stored (each is listed with its reason), 1 when the run itself failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from forum_atlas.cli.output import table
from forum_atlas.config import EMBEDDER_NAMES
from forum_atlas.runtime.prefect_api import flow_session

SOME_FILES_FAILED = 3


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("ingest", help="ingest a corpus (JSONL records, BEIR corpus.jsonl, or documents: a folder "
                                         "or a file of PDF, HTML, DOCX, Markdown, text)",
                          epilog=f"exit status: 0 all stored, {SOME_FILES_FAILED} some files failed (listed with the "
                                 "reason), 1 the run failed")
    p.add_argument("path")
    p.add_argument("--format", choices=["auto", "jsonl", "folder", "beir"], default="auto",
                   help="auto: a folder or a non-JSON file is read as documents (folder)")
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--chunk-chars", type=int, default=1200, help="largest chunk, in characters")
    p.add_argument("--overlap-chars", type=int, default=200, help="whole sentences repeated between chunks, at most this long")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES, help="default: ATLAS_EMBEDDER, else onnx-minilm")
    p.add_argument("--index-mode", choices=["auto", "incremental", "rebuild"], default="auto",
                   help="auto rebuilds the HNSW index after the load when that is cheaper than inserting into it")
    docs = p.add_argument_group("documents")
    docs.add_argument("--pdf-password", help="password of encrypted PDFs (without it they fail as 'encrypted')")
    docs.add_argument("--max-file-bytes", type=int, help="a larger file fails as 'too_large' (default 256 MiB)")
    docs.add_argument("--url", dest="document_url", help="source URL of a single document file (default: its path)")
    src = p.add_argument_group("source of a folder of files")
    src.add_argument("--source-name")
    src.add_argument("--importance", type=int, help="1–5, 5 = canonical")
    src.add_argument("--quality", type=int, help="1–5")
    src.add_argument("--licence")
    src.add_argument("--source-url")
    src.add_argument("--sector", help="default: a known source keeps its own, a new one gets general")
    dask = p.add_argument_group("Dask (pip install 'forum-atlas[dask]'): chunk and embed batches in worker processes")
    where = dask.add_mutually_exclusive_group()
    where.add_argument("--dask-workers", type=int, metavar="N",
                       help="a Dask LocalCluster of N processes (1 thread each) for this run (env ATLAS_DASK_WORKERS)")
    where.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                       help="the scheduler of a running Dask cluster (env ATLAS_DASK_ADDRESS)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_ingest)


def source_params(args: argparse.Namespace):
    if not args.source_name:
        return None
    from forum_atlas.flows.ingest import SourceParams

    return SourceParams(name=args.source_name, importance=args.importance, quality_score=args.quality,
                        licence=args.licence, url=args.source_url, sector=args.sector)


def run_ingest(path: str, task_runner=None, **options) -> dict:
    """`task_runner`: None keeps the flow's own (threads, or what ATLAS_DASK_* ask for)."""
    from forum_atlas.flows.ingest import ingest

    with flow_session():
        return (ingest.with_options(task_runner=task_runner) if task_runner else ingest)(path, **options)


@contextmanager
def _progress_bar(shown: bool) -> Iterator[None]:
    """The terminal bar watches the ingest flow this process runs (forum_atlas.ingestion.progress)."""
    if not shown:
        yield
        return
    from forum_atlas.cli.progress import TerminalProgress
    from forum_atlas.ingestion.progress import ingest_watcher

    token = ingest_watcher.set(TerminalProgress())
    try:
        yield
    finally:
        ingest_watcher.reset(token)


def print_summary(summary: dict) -> None:
    files = summary.get("file_outcomes") or []
    if files:
        print(table(["file", "outcome", "reason"], [(f["file"], f["outcome"], f["detail"]) for f in files]))
    print(table(["measure", "value"], [(k, v) for k, v in summary.items() if k != "file_outcomes"]))


def _ingest(args: argparse.Namespace) -> int:
    runner = None
    if args.dask_workers is not None or args.dask_address:
        from forum_atlas.runtime.task_runners import task_runner

        runner = task_runner(args.dask_workers, args.dask_address)
    with _progress_bar(not args.no_progress and sys.stderr.isatty()):
        summary = run_ingest(
            args.path, runner, format=args.format, source=source_params(args), batch_size=args.batch_size,
            chunk_chars=args.chunk_chars, overlap_chars=args.overlap_chars, embedder=args.embedder,
            index_mode=args.index_mode, pdf_password=args.pdf_password, document_url=args.document_url,
            **({"max_file_bytes": args.max_file_bytes} if args.max_file_bytes else {}),
        )
    print_summary(summary)
    if summary.get("files_failed"):
        print(f"{summary['files_failed']} of {summary['files']} files failed (listed above); the others are stored",
              file=sys.stderr)
        return SOME_FILES_FAILED
    return 0
