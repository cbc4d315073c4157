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

from pathlib import Path

from forum_atlas.cli.output import table
from forum_atlas.config import EMBEDDER_NAMES
from forum_atlas.ingestion.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS
from forum_atlas.ingestion.sources import SOURCE_DEFAULTS, SOURCE_SCORES, default_source_name
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
    p.add_argument("--chunk-chars", type=int, default=DEFAULT_CHUNK_CHARS, help="largest chunk, in characters")
    p.add_argument("--overlap-chars", type=int, default=DEFAULT_OVERLAP_CHARS,
                   help="whole sentences repeated between chunks, at most this long")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES, help="default: ATLAS_EMBEDDER, else onnx-minilm")
    p.add_argument("--index-mode", choices=["auto", "incremental", "rebuild"], default="auto",
                   help="auto rebuilds the HNSW index after the load when that is cheaper than inserting into it")
    docs = p.add_argument_group("documents")
    docs.add_argument("--pdf-password", help="password of encrypted PDFs (without it they fail as 'encrypted')")
    docs.add_argument("--max-file-bytes", type=int, help="a larger file fails as 'too_large' (default 256 MiB)")
    docs.add_argument("--url", dest="document_url", help="source URL of a single document file (default: its path)")
    src = p.add_argument_group("source of documents (a folder or a document file); a source already stored keeps "
                               "its own metadata for what is not given, a new one gets these defaults, each "
                               "printed as a note")
    src.add_argument("--source-name", help="default: the folder's name (a single file: its folder's)")
    src.add_argument("--importance", type=int, choices=SOURCE_SCORES, metavar="1-5",
                     help=f"5 = canonical, 1 = supplemental (default {SOURCE_DEFAULTS['importance']})")
    src.add_argument("--quality", type=int, choices=SOURCE_SCORES, metavar="1-5",
                     help=f"editorial quality, 5 = highest (default {SOURCE_DEFAULTS['quality_score']})")
    src.add_argument("--licence", help=f"licence of the texts, e.g. CC-BY-4.0 (default {SOURCE_DEFAULTS['licence']!r})")
    src.add_argument("--source-url")
    src.add_argument("--sector", help="default: a known source keeps its own, a new one gets general")
    dask = p.add_argument_group("Dask (pip install 'forum-atlas[dask]'): chunk and embed batches in worker processes")
    where = dask.add_mutually_exclusive_group()
    where.add_argument("--dask-workers", type=int, metavar="N",
                       help="a Dask LocalCluster of N processes (1 thread each) for this run (env ATLAS_DASK_WORKERS)")
    where.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                       help="the scheduler of a running Dask cluster (env ATLAS_DASK_ADDRESS)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (by default: bars on a terminal, else a line per stage)")
    p.set_defaults(handler=_ingest)


# The flag that sets each source field a run of documents may leave to its default.
_SOURCE_FLAGS = {"importance": "--importance", "quality_score": "--quality", "licence": "--licence"}


def source_params(args: argparse.Namespace):
    """The source flags given; documents get one whatever was given (the run fills in the rest), JSONL rows carry
    their own and take these only with --source-name."""
    if not args.source_name and args.format != "folder":
        return None
    from forum_atlas.flows.ingest import SourceParams

    return SourceParams(name=args.source_name, importance=args.importance, quality_score=args.quality,
                        licence=args.licence, url=args.source_url, sector=args.sector)


def default_notes(path: str, params) -> list[str]:
    """One note per source field of a run of documents that takes a default, naming the flag that sets it."""
    notes = [] if params.name else [f"source name {default_source_name(Path(path))!r}, the folder's name "
                                    "(set it with --source-name)"]
    for name, flag in _SOURCE_FLAGS.items():
        if getattr(params, name) is None:
            notes.append(f"{flag.lstrip('-')} {SOURCE_DEFAULTS[name]!r} for a new source; a stored source keeps its "
                         f"own (set it with {flag})")
    return notes


def run_ingest(path: str, task_runner=None, **options) -> dict:
    """`task_runner`: None keeps the flow's own (threads, or what ATLAS_DASK_* ask for)."""
    from forum_atlas.flows.ingest import ingest

    with flow_session():
        return (ingest.with_options(task_runner=task_runner) if task_runner else ingest)(path, **options)


@contextmanager
def _progress(shown: bool) -> Iterator[None]:
    """The ingest flow this process runs is watched (forum_atlas.ingestion.progress): bars on a terminal, a line
    per stage on stderr elsewhere."""
    if not shown:
        yield
        return
    from forum_atlas.cli.progress import LineProgress, TerminalProgress
    from forum_atlas.ingestion.progress import ingest_watcher

    token = ingest_watcher.set(TerminalProgress() if sys.stderr.isatty() else LineProgress())
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
    source = source_params(args)
    if args.format == "folder":
        for note in default_notes(args.path, source):
            print(f"note: {note}", file=sys.stderr)
    with _progress(not args.no_progress):
        summary = run_ingest(
            args.path, runner, format=args.format, source=source, batch_size=args.batch_size,
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
