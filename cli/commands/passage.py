"""`atlas passage CHUNK_ID`: a stored passage with its file, page(s) and section title — where a citation reopens.
Runs no flow, so it never imports Prefect."""

from __future__ import annotations

import argparse
import json

from forum_atlas.ingestion.documents.model import format_pages


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("passage", help="print a stored passage (chunk) with its file, page(s) and section")
    p.add_argument("chunk_id", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_passage)


def _passage(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import passage

    with Database.open() as db:
        found = passage(db, args.chunk_id)
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False, default=str))
        return 0
    place = [("document", f"{found['title']} (document {found['document_id']} v{found['document_version']})"),
             ("source", found["source_name"]), ("file", found["file"]),
             ("pages", format_pages(found["first_page"], found["last_page"])), ("section", found["section"]),
             ("characters", f"{found['start_char']}–{found['end_char']}"), ("url", found["url"]),
             ("read by", found["reader"])]
    for name, value in place:
        if value:
            print(f"{name + ':':<12}{value}")
    print()
    print(found["body"])
    return 0
