"""`atlas db status|migrate|install-kernel` and `atlas audit verify|head`."""

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
    kernel = db.add_parser(
        "install-kernel",
        help="build and install the native BM25 kernel (PostgreSQL extension atlas_bm25) with the server's PGXS",
        description="Builds the atlas_bm25 extension (sql/native/) with the server's own pg_config/PGXS and a C "
                    "compiler, installs its files into the server's directories and creates the extension "
                    "(or updates it to the new version). Idempotent: compiles only when the installed build "
                    "is not this one. Needs a superuser role and a server on this machine; elsewhere the PL/pgSQL search "
                    "serves BM25. ATLAS_BM25_KERNEL=off removes the kernel instead.")
    kernel.add_argument("--force", action="store_true", help="rebuild even if the installed build is current")
    kernel.set_defaults(handler=_install_kernel)

    audit = groups.add_parser("audit", help="audit log").add_subparsers(dest="audit_command", required=True)
    verify = audit.add_parser(
        "verify", help="recompute the audit log's hash chain and the digests of chunks, scores and vintages",
        description="Recomputes the audit log's hash chain, and the content digest of every protected row "
                    "(chunks, documents, forecast scores, series vintages, evidence snapshots) against the "
                    "digest recorded in the chain when it was written. With --head, also checks that the chain "
                    "still reaches a head exported earlier by `atlas audit head` and kept outside the database.")
    verify.add_argument("--head", metavar="ID:HASH",
                        help="a chain head exported by `atlas audit head` (ID:HASH, or HASH alone)")
    verify.set_defaults(handler=_verify)
    head = audit.add_parser(
        "head", help="print the audit chain's head (last event id and row_hash) to keep outside the database")
    head.add_argument("--json", action="store_true")
    head.set_defaults(handler=_head)


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
    last = info["bm25_kernel_last_install"]
    if last:
        compiled = "compiled" if last["compiled"] else "nothing compiled"
        version = f" {last['version']}" if last["version"] else ""
        print(f"BM25 kernel   last install: {last['outcome']}{version} ({last['trigger']}, "
              f"{last['at']:%Y-%m-%d %H:%M %Z}, {compiled})")
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


def _install_kernel(args: argparse.Namespace) -> int:
    from forum_atlas.config import settings_from_env
    from forum_atlas.store.db import install_kernel

    status = install_kernel(settings_from_env(), force=args.force)
    done = {
        "installed": f"installed atlas_bm25 {status.version}",
        "updated": f"updated atlas_bm25 to {status.version}",
        "reinstalled": f"reinstalled atlas_bm25 {status.version}",
        "rebuilt": f"rebuilt atlas_bm25 {status.version}",
        "kept": f"atlas_bm25 {status.version} is installed and current: nothing to do",
        "removed": "removed the BM25 kernel (ATLAS_BM25_KERNEL=off)",
        "unavailable": "not installed",
        "failed": "install failed",
        "": "nothing to do",
    }[status.action]
    compiled = "compiled" if status.compiled else "nothing compiled"
    print(f"BM25 kernel: {done} ({compiled}, {status.seconds:.1f} s)")
    for note in status.notes:
        print(f"  {note}")
    if status.reason:
        print(f"  {status.reason}")
    print(f"BM25 engine: {status.engine}")
    return 1 if status.action in ("unavailable", "failed") else 0


def _verify(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import ChainHead, Database, verify_audit

    head = None
    if args.head:
        try:
            head = ChainHead.parse(args.head)
        except ValueError as exc:
            print(f"audit verify: {exc}")
            return 1
    with Database.open() as db, db.connection() as conn:
        report = verify_audit(conn, head)
    if report.chain:
        print(table(["event_id", "problem"], [(p["event_id"], p["problem"]) for p in report.chain]))
        print(f"audit log: {len(report.chain)} of {report.events} events fail verification")
    else:
        print(f"audit log: {report.events} events, hash chain intact")
    if report.content:
        print(table(["table", "row", "event", "problem"],
                    [(p["table_name"], "" if p["row_id"] is None else p["row_id"],
                      "" if p["event_id"] is None else p["event_id"], p["problem"]) for p in report.content]))
        print(f"content digests: {len(report.content)} problems")
    else:
        print(f"content digests: {sum(report.rows_read.values())} rows of {len(report.rows_read)} tables, recomputed "
              "outside the database, match the digests anchored in the chain")
    if report.unrecomputed:
        print(f"not recomputed (unknown to this version; their anchors were checked): {', '.join(report.unrecomputed)}")
    if head is not None:
        where = f"event {head.event_id}" if head.event_id else "its hash"
        print(f"exported head: {report.head_problem}" if report.head_problem
              else f"exported head: the chain still reaches it ({where})")
    return 0 if report.intact else 2


def _head(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database, chain_head

    with Database.open() as db, db.connection() as conn:
        head = chain_head(conn)
    if head is None:
        print("audit log is empty: no head to export")
        return 1
    if args.json:
        print(json.dumps({"event_id": head.event_id, "row_hash": head.row_hash, "head": str(head)}))
    else:
        print(head)
    return 0
