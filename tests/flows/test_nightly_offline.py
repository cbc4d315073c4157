"""Issue 24 (3), through the real flow: an offline nightly leaves due forecasts pending (waiting for data), ends
Degraded (an alerting state) with an artifact saying why, and a later nightly that reaches FRED resolves them."""

from datetime import datetime, timezone

from forum_atlas.store import forecasts as repo
from tests.support.series import load_series_files


def test_an_offline_nightly_is_degraded_and_leaves_forecasts_waiting_then_resolves_them(
        prefect_env, database_url, db, monkeypatch, shared_data, tmp_path):
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    from forum_atlas.flows.score_accuracy import score_accuracy
    from forum_atlas.forecasting.lane import LaneQuestion
    from forum_atlas.runtime.ops_stack import ALERT_EVENTS
    from forum_atlas.runtime.prefect_api import free_port
    from forum_atlas.scoring import SCORING_VERSION
    from forum_atlas.tasks.forecasting import issue_bound_forecast
    from tests.support.wire import Reply, WireServer

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("FRED_API_KEY", raising=False)
    monkeypatch.setenv("ATLAS_FRED_CSV_BASE", f"http://127.0.0.1:{free_port()}")   # nothing listens there
    load_series_files(db, [shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv"])
    question = LaneQuestion(key="unrate-up", series_id="UNRATE", comparator=">", reference="previous",
                            target_date="2025-06-01", deadline="2025-08-01T00:00:00Z")
    fid = issue_bound_forecast(db, question, datetime(2025, 5, 20, tzinfo=timezone.utc), run_id=None,
                               seed=3)["forecast_id"]

    offline = score_accuracy(return_state=True)
    assert (offline.type.value, offline.name) == ("COMPLETED", "Degraded")
    assert f"prefect.flow-run.{offline.name}" in ALERT_EVENTS
    assert ("1 of 1 series not fetched in full (UNRATE); 1 due forecast(s) stay pending: waiting for data"
            in offline.message)
    result = offline.result()
    assert (result["run"]["due"], result["run"]["scored"], result["run"]["waiting_for_data"]) == (1, 0, 1)
    assert result["report"]["counts"]["waiting_for_data"] == 1 and result["report"]["counts"]["unresolvable"] == 0
    with get_client(sync_client=True) as client:
        # this run's: the session's Prefect server holds the artifacts of every test that ran before on it
        [artifact] = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["nightly-degraded"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[offline.state_details.flow_run_id])))
    assert "UNRATE: unavailable" in artifact.data

    newer = (shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv").read_text()
    with WireServer() as fred:
        fred.always("/graph/fredgraph.csv", Reply(200, newer, headers={"Content-Type": "text/csv"}))
        monkeypatch.setenv("ATLAS_FRED_CSV_BASE", fred.url)
        online = score_accuracy(return_state=True)
    assert (online.type.value, online.name) == ("COMPLETED", "Completed")
    assert online.result()["run"]["resolved"] == 1
    with db.connection() as conn:
        assert repo.forecast_state(conn, fid, SCORING_VERSION) == "resolved"
        assert [s["status"] for s in repo.scores_for(conn, fid)] == ["resolved"]
