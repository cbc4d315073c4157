"""`atlas demo`: the main job end to end on embedded defaults (embedded PostgreSQL, offline providers)."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.output import table

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "scifact_sample.jsonl"


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("demo", help="start the database, ingest the bundled sample, and show what was stored")
    p.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from cli.commands.ingest import print_summary, run_ingest
    from store.db import Database

    print(f"== 1. ingest {SAMPLE.name} (200 SciFact abstracts, ODC-By 1.0, allenai/scifact)")
    print_summary(run_ingest(str(SAMPLE)))

    with Database.open() as db:
        info = db.status()
        print(f"\n== 2. what is stored — {info['url']} (PostgreSQL {info['server_version']}, pgvector {info['pgvector_version']})")
        print(f"data dir: {info['data_dir'] or '(external server)'}; migration level {info['migration_level']}")
        print(table(["table", "rows"], sorted(info["counts"].items())))
    return 0
