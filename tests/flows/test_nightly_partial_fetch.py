"""Issue 10 (1): a nightly fetch that covers less than the stored newest vintage (a truncated download) is
kept as partial — never used for resolution — and the run completes on the vintage it had."""

from forum_atlas.store import forecasts as repo


def test_a_truncated_nightly_fetch_is_stored_as_partial_and_the_run_completes(
        prefect_env, database_url, db, monkeypatch, shared_data, tmp_path):
    from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy
    from tests.support.wire import Reply, WireServer

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("FRED_API_KEY", raising=False)
    full = shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv"
    repo.load_series_files(db, [full])
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
