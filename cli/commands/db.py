"""`atlas db status|migrate` and `atlas audit verify`."""

from __future__ import annotations

import argparse
import json

from forum_atlas.cli.output import table


def register(groups: argparse._SubParsersAction) -> None:
    db = groups.add_parser("db", help="database status and migrations").add_subparsers(dest="db_command", required=True)
    status = db.add_parser("status", help="where the data lives, versions, migration level, row counts")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=_status)
    db.add_parser("migrate", help="apply pending migrations from sql/").set_defaults(handler=_migrate)

    audit = groups.add_parser("audit", help="audit log").add_subparsers(dest="audit_command", required=True)
    audit.add_parser("verify", help="recompute the audit log's hash chain").set_defaults(handler=_verify)


def _status(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database

    with Database.open() as db:
        info = db.status()
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"database      {info['url']}")
    print(f"data dir      {info['data_dir'] or '(external server)'}")
    print(f"PostgreSQL    {info['server_version']}")
    print(f"pgvector      {info['pgvector_version']}")
    print(f"migrations    {len(info['migrations'])} applied, level {info['migration_level']}")
    note = f" ({info['bm25_kernel_note']})" if info["bm25_kernel_note"] else ""
    print(f"BM25 engine   {info['bm25_engine']}{note}")
    print()
    print(table(["table", "rows"], sorted(info["counts"].items())))
    if info["embedding_models"]:
        print()
        print(table(["embedding model", "engine", "version", "dim", "vectors", "HNSW index"],
                    [(m["name"], m["engine"], m["version"], m["dim"], m["vectors"],
                      "yes" if m["hnsw_index"] else "missing (exact search until the next ingest)")
                     for m in info["embedding_models"]]))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database

    with Database.open() as db:
        print(f"migration level: {db.status()['migration_level']}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database, verify_events

    with Database.open() as db, db.connection() as conn:
        problems, total = verify_events(conn)
    if problems:
        print(table(["event_id", "problem"], [(p["event_id"], p["problem"]) for p in problems]))
        print(f"audit log: {len(problems)} of {total} events fail verification")
        return 2
    print(f"audit log: {total} events, hash chain intact")
    return 0
