"""`atlas demo`: the main job end to end on embedded defaults (embedded PostgreSQL, offline providers, the
local ONNX all-MiniLM-L6-v2 embedder unless ATLAS_EMBEDDER says otherwise).

All flows run in this one process, against one Prefect API (the shared local one unless configured).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from forum_atlas.cli.output import table
from forum_atlas.resources import data_file
from forum_atlas.runtime.prefect_api import flow_session

DEMO_QUERY = "vitamin D deficiency and the risk of fractures"
# One of the shared CC BY 4.0 papers (../shared/data/documents beside the checkout): a real PDF in, a brief that
# cites it by page out.
PAPER = Path("documents") / "papers" / "10.1038_s41467-024-44806-1.pdf"
PAPER_QUESTION = "What was the optimal growth temperature of the Asgard archaea ancestor of eukaryotes?"
DIRECT_QUESTION = "Will the next large trial find that vitamin D supplementation lowers fracture risk?"
BRIEF_QUESTION = "Does vitamin D supplementation reduce fracture risk in the elderly?"


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("demo", help="ingest the bundled sample, search it, forecast, bind, score, report, "
                                       "and answer a question with an audited brief")
    p.add_argument("--report-dir", type=Path, default=Path("out") / "demo",
                   help="where the Accuracy report files go (default: out/demo in the working directory)")
    p.set_defaults(handler=_demo)


def _heading(text: str) -> None:
    print(f"\n== {text}")


def _shared_paper() -> Path | None:
    """The paper in ../shared/data beside the checkout (the working directory's, or this source tree's)."""
    for checkout in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = checkout.parent / "shared" / "data" / PAPER
        if candidate.is_file():
            return candidate
    return None


def _demo(args: argparse.Namespace) -> int:
    with flow_session():
        return _run(args.report_dir)


def _run(report_dir: Path) -> int:
    from forum_atlas.cli.commands.brief import run_ask
    from forum_atlas.cli.commands.ingest import print_summary, run_ingest
    from forum_atlas.cli.commands.search import print_result, run_search
    from forum_atlas.cli.forecast_demo import run_forecast_demo
    from forum_atlas.deliberation.render import render_html, render_text
    from forum_atlas.flows.forecast import ForecastRequest, forecast
    from forum_atlas.flows.ingest import SourceParams
    from forum_atlas.deliberation.verify import verify_brief
    from forum_atlas.store.briefs import load_brief, stored_brief
    from forum_atlas.store.db import Database

    sample = data_file("sample", "scifact_sample.jsonl")
    _heading("1. ingest the bundled sample — 200 SciFact abstracts (ODC-By 1.0, allenai/scifact)")
    print_summary(run_ingest(str(sample)))

    _heading(f"2. hybrid search: {DEMO_QUERY!r}")
    print_result(run_search(DEMO_QUERY))

    _heading("3. a forecast requested directly: published, never bound, so unscoreable (FC-4/FC-6)")
    direct = forecast(ForecastRequest(question=DIRECT_QUESTION, confidence_target=0.9, base_rate=0.5, requested_via="cli"))
    print(f"forecast {direct['forecast_id']} ({direct['state']}): p = {direct['probability']:.4f}, "
          f"interval [{direct['interval'][0]:.4f}, {direct['interval'][1]:.4f}], ci_basis: {direct['ci_basis']}")
    print(direct["interval_wording"])

    _heading("4. the binding lane issues bound forecasts on real FRED series; nightly scoring resolves them")
    report = run_forecast_demo(report_dir=report_dir)
    print(report.markdown())
    print(f"(report files in {report_dir})")

    _heading(f"5. deliberation: {BRIEF_QUESTION!r} — personas, citation audit, sealed evidence")
    brief_id = run_ask(BRIEF_QUESTION)
    with Database.open() as db:
        view = load_brief(db, brief_id)
        problems = verify_brief(stored_brief(db, brief_id))
    print(render_text(view))
    html = report_dir / f"brief-{brief_id}.html"
    html.write_text(render_html(view), encoding="utf-8")
    print(f"(HTML with the cited passages: {html}; `atlas verify {brief_id}`: "
          f"{'intact' if not problems else '; '.join(problems)})")

    _heading("6. a real PDF: one of the shared papers (CC BY 4.0, Nature Communications), ingested and cited by page")
    paper = _shared_paper()
    if paper is None:
        print(f"(skipped: ../shared/data/{PAPER} is not beside this checkout)")
    else:
        summary = run_ingest(str(paper), source=SourceParams(
            name="Nature Communications (open access)", importance=4, quality_score=4, licence="CC-BY-4.0",
            url="https://www.nature.com/ncomms", sector="biomedical"))
        print(f"{summary['files_stored']} file stored ({summary['pages']} pages, +{summary['chunks_added']} chunks)"
              if summary["files_stored"] else "already stored")
        with Database.open() as db:
            paper_view = load_brief(db, run_ask(PAPER_QUESTION))
        print(render_text(paper_view))

    with Database.open() as db:   # after the last step, so the table counts what it stored
        info = db.status()
    _heading(f"7. what is stored — PostgreSQL {info['server_version']}, pgvector {info['pgvector_version']}, "
             f"migration level {info['migration_level']}")
    print(f"data dir: {info['data_dir'] or '(external server)'}; BM25 engine: {info['bm25_engine']}")
    print(table(["table", "rows"], sorted((k, v) for k, v in info["counts"].items() if v)))
    return 0
