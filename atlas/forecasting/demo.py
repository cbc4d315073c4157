"""The forecasting half of `atlas demo`: four real FRED vintages (bundled), the questions bound on the
first and the dates of issue and scoring, so that the demo's counts (2 resolved, 1 unresolvable,
1 unscoreable) are the same on every machine. The benches that replay the demo read them here."""

from __future__ import annotations

from datetime import date, datetime, timezone

from forum_atlas.forecasting.lane import LaneQuestion

DEMO_FILES = ("UNRATE__fred_vintage_2025-04.csv", "UNRATE__fred_vintage_2026-03.csv",
              "CPIAUCSL__fred_vintage_2025-04.csv", "CPIAUCSL__fred_vintage_2026-03.csv")
ISSUED_AT = datetime(2025, 4, 15, tzinfo=timezone.utc)
SCORED_AT = datetime(2026, 3, 31, tzinfo=timezone.utc)
DEMO_QUESTIONS = [
    LaneQuestion(key="demo-cpiaucsl-mom-up", series_id="CPIAUCSL", comparator=">", reference="previous",
                 target_date=date(2025, 5, 1)),
    LaneQuestion(key="demo-unrate-mom-up", series_id="UNRATE", comparator=">", reference="previous",
                 target_date=date(2025, 4, 1)),
    LaneQuestion(key="demo-unrate-mom-up", series_id="UNRATE", comparator=">", reference="previous",
                 target_date=date(2025, 10, 1)),
]
