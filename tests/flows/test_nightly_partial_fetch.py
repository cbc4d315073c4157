"""Issue 10 (1): a nightly fetch that covers less than the stored newest vintage (a truncated download) is
kept as partial — never used for resolution — and the run completes on the vintage it had."""

from forum_atlas.store import forecasts as repo
from tests.support.series import load_series_files


def test_a_truncated_nightly_fetch_is_stored_as_partial_and_the_run_completes(
        prefect_env, database_url, db, monkeypatch, shared_data, tmp_path):
    from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy
    from tests.support.wire import Reply, WireServer

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("FRED_API_KEY", raising=False)
    full = shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv"
    load_series_files(db, [full])
    truncated = "observation_date,UNRATE\n2020-01-01,3.5\n"
    with WireServer() as srv:
        srv.queue("/graph/fredgraph.csv", Reply(200, truncated, headers={"Content-Type": "text/csv"}))
        monkeypatch.setenv("ATLAS_FRED_CSV_BASE", srv.url)
        score_accuracy(ScoringParameters(fetch_series=["UNRATE"]))
    with db.connection() as conn:
        vintages = {v["connector"]: v for v in repo.list_vintages(conn)}
        newest = repo.latest_vintage(conn, "UNRATE")
    assert vintages["fred-csv"]["partial"] and vintages["fred-csv"]["row_count"] == 1
    assert newest["vintage_id"] == vintages["file"]["vintage_id"], "the full vintage stays the one used"


def test_a_live_nightly_run_fetches_the_series_with_due_bindings_and_offline_scores_on_what_it_has(
        prefect_env, database_url, db, monkeypatch, shared_data, tmp_path):
    """Issue 13 (2): with its shipped parameters the nightly fetches every series with due bindings; FRED
    unreachable is a typed `unavailable` outcome (after Prefect's retries) and the run still scores."""
    from datetime import datetime, timezone

    from forum_atlas.flows.score_accuracy import score_accuracy
    from forum_atlas.forecasting.lane import LaneQuestion
    from forum_atlas.runtime.prefect_api import free_port
    from forum_atlas.tasks.forecasting import issue_bound_forecast

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("FRED_API_KEY", raising=False)
    monkeypatch.setenv("ATLAS_FRED_CSV_BASE", f"http://127.0.0.1:{free_port()}")   # nothing listens there
    load_series_files(db, [shared_data / "series" / f"UNRATE__fred_vintage_{month}.csv"
                                for month in ("2025-04", "2026-03")])
    question = LaneQuestion(key="unrate-up", series_id="UNRATE", comparator=">", reference="previous",
                            target_date="2025-06-01", deadline="2025-08-01T00:00:00Z")
    issue_bound_forecast(db, question, datetime(2025, 5, 20, tzinfo=timezone.utc), run_id=None, seed=3)

    result = score_accuracy()
    outcomes = [(o["series_id"], o["kind"], o["vintage_id"]) for o in result["fetched"]]
    assert outcomes == [("UNRATE", "unavailable", None)]
    assert "Connect" in result["fetched"][0]["detail"]
    assert result["run"]["due"] == result["run"]["scored"] == result["run"]["resolved"] == 1
