"""`run_forecast_demo()`: the forecast half of `atlas demo`, offline, on real FRED downloads.

1. store four real vintages (UNRATE and CPIAUCSL, downloaded 2025-04 and 2026-03);
2. run the binding lane as of 2025-04-15, when only the 2025-04 downloads existed, binding three
   month-over-month questions ('>' the previous month) for CPIAUCSL 2025-05, UNRATE 2025-04 and
   UNRATE 2025-10;
3. run nightly scoring as of 2026-03-31 on the newest vintages: CPIAUCSL 2025-05 resolves, UNRATE
   2025-04 ties with March (4.2 = 4.2) and so resolves NO under '>', UNRATE 2025-10 is empty in the
   2026-03 download and stays unresolvable (not forward-filled);
4. return (and print) the Accuracy report, and write it as files when `report_dir` is given.
Running it again adds nothing: the lane skips bound questions and scoring skips stored scores.
"""

from __future__ import annotations

from pathlib import Path

from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.flows.bind_forecasts import LaneParameters, bind_forecasts
from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy
from forum_atlas.forecasting.demo import DEMO_FILES, DEMO_QUESTIONS, ISSUED_AT, SCORED_AT
from forum_atlas.resources import data_file
from forum_atlas.scoring.report import AccuracyReport, accuracy_report
from forum_atlas.series.connectors.file import read_series_files
from forum_atlas.series.coverage import check_coverage
from forum_atlas.store.db import shared_database
from forum_atlas.store.forecasts import accuracy_rows, load_vintages


def run_forecast_demo(series_dir: Path | None = None, report_dir: Path | None = None) -> AccuracyReport:
    """`series_dir` holds the four DEMO_FILES; default: the copies bundled with the package."""
    files = [series_dir / name if series_dir else data_file("series", name) for name in DEMO_FILES]
    settings = resolve_settings()
    stored = load_vintages(shared_database(settings), read_series_files(files), check_coverage=check_coverage)
    print("series vintages: " + ", ".join(f"{s['series_id']} {s['label']} (#{s['vintage_id']}"
                                          f"{'' if s['created'] else ', already stored'})" for s in stored))
    bind_forecasts(LaneParameters(questions=DEMO_QUESTIONS, as_of=ISSUED_AT))
    score_accuracy(ScoringParameters(as_of=SCORED_AT, report_dir=str(report_dir) if report_dir else None))
    with shared_database(settings).connection() as conn:
        return accuracy_report(accuracy_rows(conn))
