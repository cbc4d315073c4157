"""`atlas ask-batch FILE [--dask-workers N | --dask-address A]`: the deliberate-batch flow, one audited brief
per question of FILE, on threads or a Dask cluster; prints one row per question (its brief, or its error)."""

from __future__ import annotations

import argparse
from pathlib import Path

from forum_atlas.cli.output import table
from forum_atlas.runtime.prefect_api import flow_session


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("ask-batch", help="deliberate every question of a file: one audited brief each")
    p.add_argument("file", type=Path, help="one question per line; a line that is a JSON object gives the deliberate "
                   "flow's parameters for its question, e.g. {\"question\": \"…\", \"sectors\": [\"health\"]}")
    dask = p.add_argument_group("Dask (pip install 'forum-atlas[dask]'): deliberate in worker processes, which "
                                "connect to the database themselves")
    where = dask.add_mutually_exclusive_group()
    where.add_argument("--dask-workers", type=int, metavar="N",
                       help="a Dask LocalCluster of N processes (1 thread each) for this run (env ATLAS_DASK_WORKERS)")
    where.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                       help="the scheduler of a running Dask cluster (env ATLAS_DASK_ADDRESS)")
    p.set_defaults(handler=_ask_batch)


def read_questions(path: Path) -> list:
    from forum_atlas.flows.deliberate import DeliberationParameters

    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [DeliberationParameters.model_validate_json(line) if line.startswith("{")
            else DeliberationParameters(question=line) for line in lines if line]


def _ask_batch(args: argparse.Namespace) -> int:
    from forum_atlas.flows.deliberate_batch import BatchFailed, deliberate_batch
    from forum_atlas.runtime.task_runners import task_runner

    questions = read_questions(args.file)
    batch = deliberate_batch
    if args.dask_workers is not None or args.dask_address:
        batch = deliberate_batch.with_options(task_runner=task_runner(args.dask_workers, args.dask_address))
    with flow_session():
        try:
            summary = batch(questions)
        except BatchFailed as failed:
            _print(failed.rows)
            raise
    _print(summary["results"])
    print(f"{len(questions)} briefs on {summary['task_runner']}")
    return 0


def _print(rows: list[dict]) -> None:
    print(table(list(rows[0]), [[row["question"][:70], *list(row.values())[1:]] for row in rows]))
