"""`atlas ask "…"` (runs the deliberate flow), `atlas brief show|list`, `atlas verify ID`.

`ask` runs a flow, so it imports Prefect inside its handler; `brief` and `verify` only read the
database and never pay Prefect's start-up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from forum_atlas.cli.commands.evidence import SOURCES, source_assignment
from forum_atlas.cli.output import add_source_filters, table
from forum_atlas.deliberation.model import SPECIALISTS
from forum_atlas.runtime.prefect_api import flow_session


def register(groups: argparse._SubParsersAction) -> None:
    ask = groups.add_parser("ask", help="deliberate: a question in, an audited brief out")
    ask.add_argument("question")
    ask.add_argument("--top-k", type=int, default=10, help="final sources per persona's retrieval (default 10)")
    add_source_filters(ask)
    ask.add_argument("--persona", action="append", dest="personas", choices=SPECIALISTS,
                     help="call this specialist (repeatable); default: the coordinator decides")
    ask.add_argument("--engine", choices=["offline", "openai"], help="LLM engine (default: ATLAS_LLM or offline)")
    ask.add_argument("--gather", action="store_true",
                     help="first gather evidence from the open sources for the question (the gather-evidence flow)")
    ask.add_argument("--gather-source", action="append", dest="gather_sources", choices=SOURCES,
                     help="with --gather: ask this source (repeatable; default as `atlas evidence gather`)")
    ask.add_argument("--gather-base-url", action="append", dest="gather_base_urls", type=source_assignment,
                     default=[], metavar="SOURCE=URL", help="with --gather: ask a mirror instead of the public API")
    _output_options(ask)
    ask.set_defaults(handler=_ask)

    brief = groups.add_parser("brief", help="stored briefs").add_subparsers(dest="brief_command", required=True)
    show = brief.add_parser("show", help="reprint a stored brief")
    show.add_argument("brief_id", type=int)
    _output_options(show)
    show.set_defaults(handler=_show)
    listing = brief.add_parser("list", help="the latest briefs")
    listing.add_argument("--limit", type=int, default=20)
    listing.set_defaults(handler=_list)

    verify = groups.add_parser("verify", help="recompute a brief's evidence-snapshot seal and re-check its citations")
    verify.add_argument("brief_id", type=int)
    verify.set_defaults(handler=_verify)


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the brief as JSON")
    parser.add_argument("--html", type=Path, metavar="FILE",
                        help="also write a self-contained HTML page (pills, passages with the quote highlighted)")


def _rendered(view, as_json: bool, html: bool) -> tuple[str, str | None]:
    from forum_atlas.deliberation.render import render_html, render_json, render_text

    return render_json(view) if as_json else render_text(view), render_html(view) if html else None


def _print(text: str, html: str | None, args: argparse.Namespace) -> None:
    print(text)
    if args.html:
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(html, encoding="utf-8")
        if not args.json:
            print(f"\nHTML: {args.html}")


def run_ask(question: str, **parameters) -> int:
    """The deliberate flow with the environment's settings; returns the brief id."""
    from forum_atlas.flows.deliberate import DeliberationParameters, deliberate

    params = DeliberationParameters(question=question, **{k: v for k, v in parameters.items() if v is not None})
    with flow_session():
        return deliberate(params)["brief_id"]


def ask_in_runner(request: dict) -> dict:
    """`atlas ask` in the warm flow runner (runtime/flow_runner.py): the flow, then the brief as the command
    prints it."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.store.briefs import load_brief
    from forum_atlas.store.db import shared_database

    brief_id = run_ask(**request["parameters"])
    text, html = _rendered(load_brief(shared_database(settings_from_env()), brief_id), request["json"], request["html"])
    return {"text": text, "html": html}


def _warm_up() -> None:
    """What every ask needs, loaded before the runner takes its first: the flow's modules and the query embedder's
    model (not the database: a question the flow refuses starts no server). Whatever fails here fails again, with
    its own message, in the ask that needs it."""
    try:
        from forum_atlas.config import settings_from_env
        from forum_atlas.embeddings import embedder_for
        from forum_atlas.flows import deliberate  # noqa: F401

        embedder_for(settings_from_env())
    except Exception:
        pass


ask_in_runner.warm_up = _warm_up
_ASK = f"{__name__}:ask_in_runner"


def _ask(args: argparse.Namespace) -> int:
    from forum_atlas.runtime import flow_runner

    parameters = dict(top_k=args.top_k, sectors=args.sectors, published_after=args.since,
                      published_before=args.until, personas=args.personas, engine=args.engine, gather=args.gather,
                      gather_options={"base_urls": dict(args.gather_base_urls),
                                      **({"sources": args.gather_sources} if args.gather_sources else {})})
    # With -v the terminal shows Prefect's log lines, which only a flow run in this process can print.
    if args.verbose or not flow_runner.enabled(_ASK):
        brief_id = run_ask(args.question, **parameters)
        return _show(argparse.Namespace(brief_id=brief_id, json=args.json, html=args.html))
    for window in ("published_after", "published_before"):
        parameters[window] = parameters[window] and parameters[window].isoformat()
    reply = flow_runner.request(_ASK, {"parameters": {"question": args.question, **parameters}, "json": args.json,
                                       "html": args.html is not None})
    _print(reply["text"], reply["html"], args)
    return 0


def _show(args: argparse.Namespace) -> int:
    from forum_atlas.store.briefs import load_brief
    from forum_atlas.store.db import Database

    with Database.open() as db:
        _print(*_rendered(load_brief(db, args.brief_id), args.json, args.html is not None), args)
    return 0


def _list(args: argparse.Namespace) -> int:
    from forum_atlas.store.briefs import list_briefs
    from forum_atlas.store.db import Database

    with Database.open() as db:
        rows = list_briefs(db, args.limit)
    print(table(["brief", "created", "verified [SOURCED]", "[INFERRED]", "downgraded", "question"],
                [(r["brief_id"], str(r["created_at"])[:19], r["audit"]["sourced_verified"], r["audit"]["inferred"],
                  r["audit"]["downgraded"], r["question"][:70]) for r in rows]))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from forum_atlas.deliberation.verify import verify_report
    from forum_atlas.store.briefs import stored_brief
    from forum_atlas.store.db import Database

    with Database.open() as db:
        report = verify_report(stored_brief(db, args.brief_id))
    sealed = f"sealed under verbatim rule {report.rule}, support rules {report.grounding or 'not recorded'}"
    for note in report.notes:
        print(f"NOTE  {note}")
    if report.problems:
        for problem in report.problems:
            print(f"FAIL  {problem}")
        print(f"brief {args.brief_id}: {len(report.problems)} problem(s); the evidence behind it cannot be trusted "
              f"as stored ({sealed})")
        return 2
    print(f"brief {args.brief_id}: evidence snapshot seal, audit-chain entry and every citation verify "
          f"({sealed})")
    return 0
