"""`atlas sources list|update`: the sources documents come from, and the one way their metadata changes."""

from __future__ import annotations

import argparse

from forum_atlas.cli.output import table


def register(groups: argparse._SubParsersAction) -> None:
    sources = groups.add_parser("sources", help="the sources of stored documents and their metadata")
    sub = sources.add_subparsers(dest="sources_command", required=True)
    sub.add_parser("list", help="each source's metadata and current documents").set_defaults(handler=_list)
    update = sub.add_parser("update", help="change a source's metadata (recorded in the audit log with the reason)")
    update.add_argument("name")
    update.add_argument("--importance", type=int, choices=range(1, 6), metavar="1-5")
    update.add_argument("--quality", dest="quality_score", type=int, choices=range(1, 6), metavar="1-5")
    update.add_argument("--sector")
    update.add_argument("--licence")
    update.add_argument("--url")
    update.add_argument("--reason", required=True, help="why (stored in the SOURCE_UPDATED event)")
    update.set_defaults(handler=_update)


def _list(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import list_sources

    with Database.open() as db:
        rows = list_sources(db)
    print(table(["source", "importance", "quality", "sector", "licence", "url", "documents", "updated"],
                [(r["name"], r["importance"], r["quality_score"], r["sector"], r["licence"], r["url"], r["documents"],
                  r["updated_at"].date().isoformat()) for r in rows]))
    return 0


def _update(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import update_source

    changes = {f: getattr(args, f) for f in ("importance", "quality_score", "sector", "licence", "url")
               if getattr(args, f) is not None}
    with Database.open() as db:
        before, after = update_source(db, args.name, changes, args.reason)
    print(table(["field", "before", "after"], [(f, getattr(before, f), getattr(after, f)) for f in changes]))
    return 0
