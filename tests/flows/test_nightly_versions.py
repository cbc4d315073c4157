"""Issue 24 (5): the nightly keeps every scoring version in use current — the default and each version a data
engineer backfilled — so a forecast that comes due after a backfill is scored in the backfilled version too; a
version never backfilled gets nothing."""

from datetime import datetime, timezone

from forum_atlas.store import forecasts as repo
from tests.support.series import load_series_files

UTC = timezone.utc


def test_the_nightly_scores_the_default_and_every_backfilled_version(prefect_env, database_url, db, monkeypatch,
                                                                     shared_data, tmp_path):
    from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy
    from forum_atlas.forecasting.lane import LaneQuestion
    from forum_atlas.tasks.scoring import run_scoring
    from forum_atlas.tasks.forecasting import issue_bound_forecast

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    series = shared_data / "series"
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    june, july = (issue_bound_forecast(
        db, LaneQuestion(key=f"unrate-up-{month}", series_id="UNRATE", comparator=">", reference="previous",
                         target_date=f"2025-{month:02d}-01", deadline=f"2025-{month + 2:02d}-01T00:00:00Z"),
        datetime(2025, 4, 20, tzinfo=UTC), run_id=None, seed=month)["forecast_id"] for month in (6, 7))
    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])
    with db.transaction() as conn:   # log-v1 backfilled over June's deadline only: July is not due in that range
        backfill = run_scoring(conn, mode="backfill", scoring_version="log-v1",
                               deadline_to=datetime(2025, 8, 15, tzinfo=UTC))
    assert (backfill.inserted, backfill.resolved) == (1, 1)

    result = score_accuracy(ScoringParameters(fetch_series=[]))

    assert list(result["versions"]) == ["brier-v1", "log-v1"], "the default first, then the backfilled version"
    assert (result["versions"]["brier-v1"]["inserted"], result["versions"]["log-v1"]["inserted"]) == (2, 1)
    with db.connection() as conn:
        for version, scored in (("brier-v1", [june, july]), ("log-v1", [june, july]), ("brier-v2", [])):
            current = repo.current_scores(conn, version)
            assert sorted(current["forecast_id"]) == scored, version
            assert set(current["status"]) <= {"resolved"}, version
        assert repo.scoring_versions_in_use(conn) == ["brier-v1", "log-v1"]
