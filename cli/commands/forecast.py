"""`atlas forecast …`, `atlas series …`, `atlas score …`, `atlas accuracy`.

Commands that run a flow (forecast ask/demo, score nightly/backfill) import Prefect inside
their handler; series load/list/register, forecast show/backtest and accuracy run without Prefect
(the `backtest-forecasts` deployment runs the same backtest as a flow).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from forum_atlas.cli.output import day, instant, table
from forum_atlas.scoring.versions import DEFAULT_VERSION, SCORING_RULES
from forum_atlas.series.parsing import FREQUENCIES


def register(groups: argparse._SubParsersAction) -> None:
    fc = groups.add_parser("forecast", help="forecasts: ask directly (unbound), show, backtest, demo "
                                                "(the binding lane: atlas lane)")
    fc_sub = fc.add_subparsers(dest="forecast_command", required=True)
    ask = fc_sub.add_parser("ask", help="a direct forecast (published, never bound, so unscoreable)")
    ask.add_argument("question")
    ask.add_argument("--confidence-target", type=float, default=0.9, help="in (0, 1); >= 0.9 → 10,000 samples")
    ask.add_argument("--base-rate", type=float, default=0.5)
    ask.add_argument("--driver", action="append", default=[], metavar="JSON",
                     help='{"name":…, "hypothesis":…, "effect":…, "effect_sd":…, "weight":…}; repeatable')
    ask.add_argument("--seed", type=int)
    ask.add_argument("--json", action="store_true")
    ask.set_defaults(handler=_ask)
    show = fc_sub.add_parser("show", help="a forecast, its binding, live state and every score version")
    show.add_argument("forecast_id", type=int)
    show.set_defaults(handler=_show)
    backtest = fc_sub.add_parser("backtest", help="rolling-origin backtest of the lane's rule on a series vintage")
    backtest.add_argument("source", metavar="FILE_OR_SERIES_ID",
                          help="a FRED CSV file (or a year/quarter table), or a registered id (newest stored vintage)")
    backtest.add_argument("--horizon", default="30d", help="30d, 1m, 1q or N periods of the series (default 30d)")
    backtest.add_argument("--every", type=int, default=1, help="an origin every K-th published observation")
    backtest.add_argument("--from", dest="start", type=day, help="first origin date")
    backtest.add_argument("--to", dest="end", type=day, help="last origin date")
    backtest.add_argument("--comparator", choices=[">", ">=", "<", "<="], default=">")
    against = backtest.add_mutually_exclusive_group()
    against.add_argument("--threshold", type=float, help="compare the target with this fixed value")
    against.add_argument("--against-origin", action="store_true", help="compare with the origin's value (default)")
    backtest.add_argument("--rule", choices=["v8", "v7", "v6", "v5", "v4", "v3", "v2", "v1"], default="v4",
                          help="v4: the lane's rule (issue 27); v7, v8: issue 41's earned departures; v6, v5: candidates "
                               "not adopted; v3, v2, v1: the rules it replaced")
    backtest.add_argument("--column", help="column of a year/quarter table (default realgdp)")
    backtest.add_argument("--vintage", type=int, help="stored vintage id when the source is a series id")
    backtest.add_argument("--seed", type=int, default=0)
    backtest.add_argument("--json", action="store_true")
    backtest.add_argument("--out", type=Path, help="write backtest.md, backtest.json and reliability.png here")
    backtest.set_defaults(handler=_backtest)
    demo = fc_sub.add_parser("demo", help="bind, resolve and score real FRED questions offline; print Accuracy")
    demo.add_argument("--series-dir", type=Path)
    demo.add_argument("--report-dir", type=Path)
    demo.set_defaults(handler=_demo)

    series = groups.add_parser("series", help="public data series and their vintages")
    series_sub = series.add_subparsers(dest="series_command", required=True)
    load = series_sub.add_parser("load", help="store FRED CSV exports as vintages (both export formats)")
    load.add_argument("paths", nargs="+", type=Path)
    load.add_argument("--fetched-at", type=instant,
                      help="download time (default: the month in a <ID>__fred_vintage_YYYY-MM.csv name; a file "
                           "named otherwise needs it — the file's modification time is never used)")
    load.add_argument("--label", help="vintage label (default: from the file name)")
    load.add_argument("--partial", action="store_true",
                      help="store files that cover fewer dates than the previous vintage as PARTIAL: kept and "
                           "listed, never used as the newest vintage (without it such a file is refused)")
    load.set_defaults(handler=_series_load)
    listing = series_sub.add_parser("list", help="stored vintages")
    listing.add_argument("--series")
    listing.set_defaults(handler=_series_list)
    register = series_sub.add_parser("register", help="register a series so forecasts can be bound to it")
    register.add_argument("series_id")
    register.add_argument("--title", required=True)
    register.add_argument("--frequency", required=True, choices=FREQUENCIES)
    register.add_argument("--units", required=True)
    register.add_argument("--publisher", required=True)
    register.set_defaults(handler=_series_register)
    registry = series_sub.add_parser("registry", help="the registered series (bindable ids)")
    registry.set_defaults(handler=_series_registry)

    score = groups.add_parser("score", help="resolve and Brier-score bound forecasts")
    score_sub = score.add_subparsers(dest="score_command", required=True)
    nightly = score_sub.add_parser("nightly", help="what the nightly deployment runs")
    nightly.add_argument("--as-of", type=instant)
    nightly.add_argument("--report-dir", type=Path)
    nightly.set_defaults(handler=_nightly)
    backfill = score_sub.add_parser("backfill", help="score due forecasts (deadlines in [--from, --to)) in a scoring "
                                                     "version, beside the others, idempotently")
    backfill.add_argument("--version", dest="scoring_version", choices=list(SCORING_RULES), default=DEFAULT_VERSION,
                          help=f"scoring version to write (default {DEFAULT_VERSION})")
    backfill.add_argument("--from", dest="deadline_from", type=day, help="first deadline included (default: all)")
    backfill.add_argument("--to", dest="deadline_to", type=day, help="first deadline excluded (default: all passed)")
    backfill.add_argument("--vintage", type=int, help="vintage id (default: newest by --as-of)")
    backfill.add_argument("--series")
    backfill.add_argument("--as-of", type=instant)
    backfill.set_defaults(handler=_backfill)

    accuracy = groups.add_parser("accuracy", help="the Accuracy report, live from the database")
    accuracy.add_argument("--out", type=Path, help="also write accuracy.md, accuracy.json, reliability.png here")
    accuracy.add_argument("--fixed-base-rate", type=float, default=0.5)
    accuracy.add_argument("--version", dest="scoring_version", choices=list(SCORING_RULES), default=DEFAULT_VERSION,
                          help=f"the scoring version reported (default {DEFAULT_VERSION}); every version's summary "
                               "is listed beside it")
    accuracy.add_argument("--json", action="store_true")
    accuracy.set_defaults(handler=_accuracy)


def _ask(args: argparse.Namespace) -> int:
    from forum_atlas.flows.forecast import DriverInput, ForecastRequest, forecast

    drivers = [DriverInput.model_validate_json(d) for d in args.driver] or None
    request = ForecastRequest(question=args.question, confidence_target=args.confidence_target,
                              base_rate=args.base_rate, drivers=drivers, seed=args.seed, requested_via="cli")
    summary = forecast(request)
    print(json.dumps(summary, indent=2) if args.json else
          f"forecast {summary['forecast_id']} ({summary['state']}): p = {summary['probability']:.4f}, "
          f"interval [{summary['interval'][0]:.4f}, {summary['interval'][1]:.4f}] "
          f"ci_basis: {summary['ci_basis']}\n{summary['interval_wording']}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from forum_atlas.scoring import SCORING_VERSION
    from forum_atlas.store import forecasts as repo
    from forum_atlas.store.db import Database

    with Database.open() as db, db.connection() as conn:
        row = repo.get_forecast(conn, args.forecast_id)
        if row is None:
            raise ValueError(f"forecast {args.forecast_id} does not exist")
        state = repo.forecast_state(conn, args.forecast_id, SCORING_VERSION)
        scores = repo.scores_for(conn, args.forecast_id)
    print(f"forecast {row['forecast_id']}: {row['question']}")
    print(f"  issued {row['issued_at'].isoformat()} via {row['requested_via']}; state {state}")
    print(f"  p = {row['probability']:.4f}, {row['ci_method']} interval [{row['ci_low']:.4f}, {row['ci_high']:.4f}] "
          f"(ci_basis: {row['ci_basis']}), {row['n_samples']} samples, seed {row['seed']}")
    if row["series_id"]:
        against = row["reference_date"] or row["threshold"]
        print(f"  bound: {row['series_id']} {row['target_date']} {row['comparator']} {against}, "
              f"deadline {row['deadline'].isoformat()}")
    if scores:
        print(table(["score", "version", "vintage", "status", "outcome", "brier", "log score", "at the deadline",
                     "target", "reference", "reason"],
                    [(s["score_id"], s["scoring_version"], f"{s['vintage_label']} #{s['vintage_id']}", s["status"],
                      s["outcome"], _rounded(s["brier"]), _rounded(s["log_score"]), _at_deadline(s), s["target_value"],
                      s["reference_value"], s["reason"]) for s in scores]))
    return 0


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _at_deadline(score: dict) -> str | None:
    """A version that records the deadline vintage: that vintage and the outcome it gave."""
    if score["deadline_vintage_id"] is None:
        return None
    outcome = "not known" if score["deadline_outcome"] is None else f"outcome {score['deadline_outcome']}"
    return f"#{score['deadline_vintage_id']}: {outcome}"


def _backtest(args: argparse.Namespace) -> int:
    from forum_atlas.forecasting.backtest import BacktestSpec, horizon_periods, read_series_file, run_backtest

    if Path(args.source).is_file():
        series = read_series_file(Path(args.source), args.column)
    else:
        from forum_atlas.store.db import Database
        from forum_atlas.store.forecasts import backtest_source

        with Database.open() as db, db.connection() as conn:
            series = backtest_source(conn, args.source, args.vintage)
    spec = BacktestSpec(horizon=horizon_periods(args.horizon, series.frequency), every=args.every, start=args.start,
                        end=args.end, comparator=args.comparator, threshold=args.threshold, rule=args.rule,
                        seed=args.seed)
    result = run_backtest(series, spec)
    summary = {k: v for k, v in result.summary().items() if k not in ("reliability_bins", "base_rate_candidates")}
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(table(["measure", "value"], [(k, f"{v:.4f}" if isinstance(v, float) else v)
                                           for k, v in summary.items()]))
        for name, count in result.metrics.get("base_rate_candidates", {}).items():
            print(f"base-rate candidates {name}: {count} origins")
        print(table(["ECE bin", "n", "mean forecast", "observed frequency"],
                    [(f"[{b['lower']:.1f}, {b['upper']:.1f}]", b["n"], f"{b['mean_forecast']:.3f}",
                      f"{b['observed_frequency']:.3f}") for b in result.metrics.get("reliability_bins", [])]))
        for note in result.notes:
            print(f"note: {note}")
    print(f"elapsed: {result.seconds:.2f} s", file=sys.stderr)  # timing varies; stdout stays reproducible
    if args.out:
        for kind, path in result.write(args.out).items():
            print(f"wrote {kind}: {path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from forum_atlas.cli.forecast_demo import run_forecast_demo

    report = run_forecast_demo(series_dir=args.series_dir, report_dir=args.report_dir)
    print(report.markdown())
    return 0


def _series_load(args: argparse.Namespace) -> int:
    from forum_atlas.series.connectors.file import read_series_files
    from forum_atlas.series.coverage import check_coverage
    from forum_atlas.store.db import Database
    from forum_atlas.store.forecasts import load_vintages

    fetched = read_series_files(args.paths, label=args.label, fetched_at=args.fetched_at)
    with Database.open() as db:
        results = load_vintages(db, fetched, check_coverage=check_coverage, partial=args.partial)
    print(table(["series", "vintage", "id", "stored", "rows", "missing", "content hash", "kind", "fetched at"],
                [(r["series_id"], r["label"], r["vintage_id"], "new" if r["created"] else "already stored",
                  r["rows"], r["missing"], r["content_hash"][:12], "partial" if r["partial"] else "full",
                  r["fetched_at"].isoformat()) for r in results]))
    return 0


def _series_list(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.forecasts import list_vintages

    with Database.open() as db, db.connection() as conn:
        rows = list_vintages(conn, args.series)
    print(table(["id", "series", "vintage", "fetched at", "connector", "rows", "missing", "first", "last", "hash",
                 "kind"],
                [(r["vintage_id"], r["series_id"], r["label"], r["fetched_at"].isoformat(), r["connector"],
                  r["row_count"], r["missing"], r["first_date"], r["last_date"], r["content_hash"][:12],
                  "partial (never used)" if r["partial"] else "full")
                 for r in rows]))
    return 0


def _series_register(args: argparse.Namespace) -> int:
    from forum_atlas.series.registry import SeriesInfo
    from forum_atlas.store.db import Database
    from forum_atlas.store.forecasts import register_series

    info = SeriesInfo(args.series_id, args.title, args.frequency, args.units, args.publisher)
    with Database.open() as db, db.transaction() as conn:
        created = register_series(conn, info)
    print(f"{info.series_id}: {'registered' if created else 'already registered'} ({info.frequency}); "
          f"cite as: {info.citation}")
    return 0


def _series_registry(args: argparse.Namespace) -> int:
    from forum_atlas.store.db import Database
    from forum_atlas.store.forecasts import registered_series

    with Database.open() as db, db.connection() as conn:
        registered = registered_series(conn)
    print(table(["series", "frequency", "units", "publisher", "title"],
                [(i.series_id, i.frequency, i.units, i.publisher, i.title) for i in registered]))
    return 0


def _nightly(args: argparse.Namespace) -> int:
    from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy

    score_accuracy(ScoringParameters(as_of=args.as_of, report_dir=str(args.report_dir) if args.report_dir else None))
    return 0


def _backfill(args: argparse.Namespace) -> int:
    from forum_atlas.flows.backfill_scores import BackfillParameters, backfill_scores

    summary = backfill_scores(BackfillParameters(scoring_version=args.scoring_version, deadline_from=args.deadline_from,
                                                 deadline_to=args.deadline_to, vintage_id=args.vintage,
                                                 series_id=args.series, as_of=args.as_of))
    print(table(["measure", "value"], [(k, v) for k, v in summary.items() if k != "quality_checks"]))
    return 0


def _accuracy(args: argparse.Namespace) -> int:
    from forum_atlas.scoring.report import accuracy_report
    from forum_atlas.store.db import Database
    from forum_atlas.store.forecasts import accuracy_rows

    with Database.open() as db, db.connection() as conn:
        report = accuracy_report(accuracy_rows(conn, args.scoring_version), fixed_base_rate=args.fixed_base_rate)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(table(["measure", "value"], report.rows()))
        for note in report.notes:
            print(f"note: {note}")
    if args.out:
        for kind, path in report.write(args.out).items():
            print(f"wrote {kind}: {path}")
    return 0
