"""`atlas evidence gather "…"` (runs the gather-evidence flow) and `atlas evidence show RUN` (reads
the stored run; no Prefect start-up)."""

from __future__ import annotations

import argparse
import json

from forum_atlas.cli.output import table

SOURCES = ("pubmed", "cochrane", "pmc", "europepmc", "openalex", "clinicaltrials", "openfda", "crossref", "dailymed",
           "medlineplus")


def source_assignment(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected SOURCE=VALUE, got {text!r}")
    return key, value


def register(groups: argparse._SubParsersAction) -> None:
    evidence = groups.add_parser("evidence", help="gather evidence from open sources; show a stored run")
    sub = evidence.add_subparsers(dest="evidence_command", required=True)
    gather = sub.add_parser("gather", help="ask the open sources in parallel (typed outcomes), ingest what may "
                                           "support a claim")
    gather.add_argument("question")
    gather.add_argument("--source", action="append", dest="sources", choices=SOURCES,
                        help="ask this source (repeatable; default: pubmed europepmc openalex clinicaltrials openfda)")
    gather.add_argument("--limit", type=int, default=10, help="records per source (default 10)")
    gather.add_argument("--name", action="append", dest="names", default=[],
                        help="a name to remove from the outbound query (repeatable)")
    gather.add_argument("--filter", action="append", dest="filters", type=source_assignment, default=[],
                        metavar="SOURCE=KEY:VALUE", help="a per-source filter, e.g. openfda=endpoint:event")
    gather.add_argument("--timeout", action="append", dest="timeouts", type=source_assignment, default=[],
                        metavar="SOURCE=SECONDS", help="override a source's timeout")
    gather.add_argument("--base-url", action="append", dest="base_urls", type=source_assignment, default=[],
                        metavar="SOURCE=URL", help="ask a mirror instead of the public API")
    gather.add_argument("--retraction-watch", metavar="CSV", help="the Retraction Watch CSV for the retraction gate")
    gather.add_argument("--no-crossref", action="store_true", help="no Crossref look-ups (every DOI then fails closed)")
    gather.add_argument("--no-ingest", action="store_true", help="store the run only; ingest nothing")
    gather.add_argument("--cache-ttl", type=float, default=24.0, metavar="HOURS",
                        help="reuse a source's stored answer to the same de-identified query this young "
                             "(default 24; 0 = always ask)")
    gather.add_argument("--json", action="store_true", help="print the run summary as JSON")
    gather.set_defaults(handler=_gather)
    show = sub.add_parser("show", help="a stored run: per-source outcomes and what became of each record")
    show.add_argument("run_id", type=int)
    show.set_defaults(handler=_show)


def _gather(args: argparse.Namespace) -> int:
    from forum_atlas.flows.gather_evidence import GatherParameters, gather_evidence
    from forum_atlas.runtime.prefect_api import flow_session

    plan: dict[str, dict[str, str]] = {}
    for source, condition in args.filters:
        key, _, value = condition.partition(":")
        plan.setdefault(source, {})[key] = value
    params = GatherParameters(
        question=args.question, **({"sources": args.sources} if args.sources else {}), plan=plan, limit=args.limit,
        names=args.names, check_crossref=not args.no_crossref, retraction_watch_csv=args.retraction_watch,
        timeouts_s={s: float(v) for s, v in args.timeouts}, base_urls=dict(args.base_urls), ingest=not args.no_ingest,
        cache_ttl_hours=args.cache_ttl)
    with flow_session():
        out = gather_evidence(params)
    if args.json:
        print(json.dumps(out, indent=2, default=str))
        return 0
    print(f"evidence run {out['run_id']}: {out['question']}")
    print(table(["source", "outcome", "ms", "attempts", "cached", "detail"],
                [(o["source"], o["outcome"], o["latency_ms"], o["attempts"], "yes" if o["cached"] else "",
                  o["detail"][:70]) for o in out["outcomes"]]))
    print(f"{out['may_support']} may support a claim ({out['documents_added']} new documents), "
          f"{out['ranked'] - out['may_support']} context only, {out['excluded']} excluded; "
          f"removed before sending: {out['removed'] or 'nothing'}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.evidence import load_run

    with Database.open() as db:
        run = load_run(db, args.run_id)
    print(f"evidence run {run['run_id']} ({run['created_at']:%Y-%m-%d %H:%M} UTC): {run['question']}")
    print(table(["source", "outcome", "ms", "detail"],
                [(o["source"], o["label"], o["latency_ms"], o["detail"][:70]) for o in run["outcomes"]]))
    print(table(["status", "record", "score", "reason"],
                [(r["status"], r["record_key"][:60], "" if r["score"] is None else f"{r['score']:.3f}",
                  r["reason"][:80]) for r in run["records"]]))
    return 0
