"""The forecast flows under a real (temporary) Prefect API, writing to a per-test PostgreSQL."""

from __future__ import annotations

import importlib
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from forum_atlas.forecasting.adaptive import ADAPTIVE_RULE_VERSION
from forum_atlas.forecasting.lane import LaneQuestion
from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.store import forecasts as repo
from forum_atlas.tasks.forecasting import series_registry
from tests.support.series import load_series_files

REPO = Path(__file__).resolve().parents[2]
UTC = timezone.utc


@pytest.fixture
def atlas_env(monkeypatch, database_url, tmp_path):
    """Flows resolve settings from the environment: point them at this test's database."""
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATLAS_LLM", "offline")


def _deployment(name: str) -> dict:
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    return next(d for d in spec["deployments"] if d["name"] == name)


def test_prefect_yaml_ships_the_lane_paused_and_scoring_nightly():
    lane = _deployment("bind-forecasts")
    # `atlas ops deploy` seeds these on a new deployment; `schedules: null` keeps a deployed one's (issue 37)
    assert lane["schedules"] is None
    assert lane["initial_schedules"] == [{"cron": lane["initial_schedules"][0]["cron"], "timezone": "UTC",
                                          "active": False}]
    nightly = _deployment("score-accuracy")
    assert nightly["initial_schedules"][0]["active"] is True and nightly["initial_schedules"][0]["timezone"] == "UTC"
    for name in ("forecast", "bind-forecasts", "score-accuracy", "backfill-scores", "backtest-forecasts"):
        # the shipped parameters must validate against the flow's typed (pydantic) signature
        deployment = _deployment(name)
        path, function = deployment["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), function)
        flow.validate_parameters(deployment.get("parameters") or {})
        schema = flow.parameters.model_dump()
        assert schema["definitions"], f"{name}: parameters should be typed models the UI renders as forms"


def test_direct_forecast_flow_publishes_an_unscoreable_forecast(prefect_env, atlas_env, db):
    from forum_atlas.flows.forecast import ForecastRequest, forecast

    summary = forecast(ForecastRequest(question="Will the unemployment rate rise next quarter?",
                                       confidence_target=0.95, base_rate=0.4, seed=9))
    assert summary["n_samples"] == 10_000 and summary["seed"] == 9 and summary["state"] == "unscoreable"
    assert summary["ci_basis"] == "monte_carlo_sampling_95"
    with db.connection() as conn:
        row = repo.get_forecast(conn, summary["forecast_id"])
        assert repo.forecast_state(conn, summary["forecast_id"], SCORING_VERSION) == "unscoreable"
    assert row["requested_via"] == "api" and row["series_id"] is None
    assert [d["name"] for d in row["drivers"]] == ["unemployment", "rate", "rise"]
    assert row["engine"]["drivers"].startswith("offline-rule")


def test_forecast_flow_refuses_a_bad_confidence_target_and_writes_nothing(prefect_env, atlas_env, db):
    from forum_atlas.flows.forecast import ForecastRequest, forecast

    with pytest.raises(Exception, match="confidence_target\n  Input should be less than 1"):
        forecast(ForecastRequest(question="q?", confidence_target=1.0))
    with pytest.raises(Exception, match="strictly between 0 and 1"):   # a caller that skips validation
        forecast(ForecastRequest.model_construct(question="q?", confidence_target=1.0, base_rate=0.5, drivers=None,
                                                 seed=None, requested_via="api"))
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.forecasts").fetchone()["n"] == 0


def test_paused_lane_binds_nothing_until_resumed(prefect_env, atlas_env, db, shared_data):
    """The deployment as prefect.yaml ships it: the paused schedule produces no runs (and so no
    bindings); once resumed it produces runs, and executing one binds."""
    from prefect import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.flow_engine import run_flow
    from prefect.states import Scheduled

    from forum_atlas.flows.bind_forecasts import bind_forecasts

    load_series_files(db, [shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv"])
    shipped = _deployment("bind-forecasts")["initial_schedules"][0]
    params = {"params": {"as_of": "2025-04-15T00:00:00+00:00", "questions": [
        {"key": "lane-unrate", "series_id": "UNRATE", "comparator": ">", "reference": "previous"}]}}
    deployment = bind_forecasts.to_deployment(
        name="bind-forecasts", parameters=params,
        schedules=[{"schedule": CronSchedule(cron=shipped["cron"], timezone=shipped["timezone"]),
                    "active": shipped["active"]}])
    deployment_id = deployment.apply()
    with get_client(sync_client=True) as client:
        only_this = DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
        [schedule] = client.read_deployment(deployment_id).schedules
        assert schedule.active is False
        client.request("POST", "/deployments/{id}/schedule", path_params={"id": deployment_id},
                       json={"min_runs": 3, "end_time": (datetime.now(UTC) + timedelta(days=5)).isoformat()})
        assert client.read_flow_runs(deployment_filter=only_this) == []
        with db.connection() as conn:
            assert repo.last_bound_at(conn) is None
        client.update_deployment_schedule(deployment_id, schedule.id, active=True)
        client.request("POST", "/deployments/{id}/schedule", path_params={"id": deployment_id},
                       json={"min_runs": 3, "end_time": (datetime.now(UTC) + timedelta(days=5)).isoformat()})
        runs = client.read_flow_runs(deployment_filter=only_this)
        assert len(runs) >= 3 and all(r.state.is_scheduled() for r in runs)
        # Execute the first scheduled run now, as a worker would at its time (the engine would
        # otherwise wait until tomorrow's 06:00 UTC).
        client.set_flow_run_state(runs[0].id, Scheduled(scheduled_time=datetime.now(UTC)), force=True)
        run = client.read_flow_run(runs[0].id)
    results = run_flow(bind_forecasts, flow_run=run, parameters=run.parameters)
    assert [r["status"] for r in results] == ["bound"]
    with db.connection() as conn:
        assert repo.last_bound_at(conn) == datetime(2025, 4, 15, tzinfo=UTC)


def test_lane_with_one_bad_question_binds_nothing(prefect_env, atlas_env, db, shared_data):
    from forum_atlas.flows.bind_forecasts import LaneParameters, bind_forecasts
    from forum_atlas.forecasting.binding import BindingError

    load_series_files(db, [shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv"])
    good = {"key": "ok", "series_id": "UNRATE", "comparator": ">", "reference": "previous"}
    bad = {"key": "late", "series_id": "UNRATE", "comparator": ">", "threshold": 4.0,
           "target_date": "2025-05-01", "deadline": "2025-04-01T00:00:00Z"}
    with pytest.raises(BindingError, match="the lane bound nothing: question 'late'"):
        bind_forecasts(LaneParameters(questions=[good, bad], as_of=datetime(2025, 4, 15, tzinfo=UTC)))
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM forum.forecasts").fetchone()["n"] == 0


def test_demo_binds_resolves_scores_and_reports_and_backfill_twice_changes_nothing(
        prefect_env, atlas_env, db, tmp_path):
    from forum_atlas.cli.forecast_demo import run_forecast_demo
    from forum_atlas.flows.backfill_scores import BackfillParameters, backfill_scores

    report = run_forecast_demo(report_dir=tmp_path / "report")
    assert report.counts == {"unscoreable": 0, "pending": 0, "waiting_for_data": 0, "resolved": 2,
                             "unresolvable": 1}
    assert report.last_bound_at == datetime(2025, 4, 15, tzinfo=UTC)
    assert report.metrics.n_resolved == 2
    assert (tmp_path / "report" / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    again = run_forecast_demo()
    assert again.counts == report.counts and again.metrics.brier == report.metrics.brier
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["accuracy-table", "accuracy-report"])))
    assert {a.type for a in artifacts} == {"table", "markdown"}
    assert any("| resolved | 2 |" in str(a.data) for a in artifacts if a.type == "markdown")

    def snapshot():
        with db.connection() as conn:
            return conn.execute("SELECT * FROM forum.forecast_scores ORDER BY score_id").fetchall()

    before = snapshot()
    params = BackfillParameters(deadline_from=date(2025, 1, 1), deadline_to=date(2026, 1, 1))
    first, second = backfill_scores(params), backfill_scores(params)
    assert first["inserted"] == second["inserted"] == 0
    assert first["reproduced"] == second["reproduced"] == 3
    assert snapshot() == before


def test_driver_evidence_cites_ingested_passages(prefect_env, atlas_env, db, tmp_path):
    import json

    from forum_atlas.flows.forecast import DriverInput, ForecastRequest, forecast
    from forum_atlas.flows.ingest import ingest

    source = {"name": "BLS releases", "importance": 5, "quality_score": 5, "licence": "public domain"}
    rows = [{"id": "r1", "title": "Employment Situation", "source": source,
             "text": "Initial jobless claims rose sharply in March as layoffs spread across manufacturing."},
            {"id": "r2", "title": "CPI release", "source": source,
             "text": "Shelter costs continued to push consumer prices higher through the spring."}]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ingest(path=str(corpus), format="jsonl")
    summary = forecast(ForecastRequest(question="Will unemployment rise?", confidence_target=0.5, seed=1, drivers=[
        DriverInput(name="claims", hypothesis="jobless claims rose as layoffs spread", effect=0.5, weight=1.0)]))
    assert summary["n_samples"] == 1_000
    with db.connection() as conn:
        row = repo.get_forecast(conn, summary["forecast_id"])
        [driver] = row["drivers"]
        bodies = {r["chunk_id"]: r["body"] for r in conn.execute("SELECT chunk_id, body FROM forum.chunks")}
    assert row["engine"]["evidence"] == "hybrid retrieval"
    assert driver["evidence"], "the driver should cite at least one passage"
    top = driver["evidence"][0]
    assert top["quote"] in bodies[top["chunk_id"]] and "layoffs" in top["quote"]


def test_nightly_flow_fetches_a_new_vintage_over_http(prefect_env, atlas_env, db, monkeypatch, shared_data):
    from forum_atlas.flows.score_accuracy import ScoringParameters, score_accuracy
    from tests.support.wire import Reply, WireServer

    body = (shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv").read_text()
    with WireServer() as srv:
        srv.queue("/graph/fredgraph.csv", Reply(200, body, headers={"Content-Type": "text/csv"}))
        monkeypatch.setenv("ATLAS_FRED_CSV_BASE", srv.url)
        monkeypatch.delenv("FRED_API_KEY", raising=False)
        result = score_accuracy(ScoringParameters(fetch_series=["UNRATE"]))
    assert result["run"]["due"] == 0
    with db.connection() as conn:
        [vintage] = repo.list_vintages(conn)
    assert (vintage["series_id"], vintage["connector"], vintage["row_count"], vintage["missing"]) == \
        ("UNRATE", "fred-csv", 194, 1)


def test_backtest_flow_on_a_stored_vintage_and_on_a_file_publishes_the_reliability_diagram(
        prefect_env, atlas_env, db, shared_data, tmp_path):
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from forum_atlas.flows.backtest_forecasts import BacktestParameters, backtest_forecasts

    unrate = shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv"
    load_series_files(db, [unrate])
    stored = backtest_forecasts(BacktestParameters(source="UNRATE", horizon="1m", out_dir=str(tmp_path)))
    from_file = backtest_forecasts(BacktestParameters(source=str(unrate), horizon="1m"))
    assert stored["source"] == "UNRATE vintage 2026-03 (#1)" and from_file["source"] == unrate.name
    # the same observations give the same numbers, whichever way they were read
    assert {k: v for k, v in stored.items() if k != "source"} == {k: v for k, v in from_file.items() if k != "source"}
    assert stored["unresolvable"] == 1 and stored["n"] > 150
    assert stored["rule"] == ADAPTIVE_RULE_VERSION  # the lane's rule
    assert {"skill_vs_half", "skill_vs_hindsight_window", "last_third_ece"} <= set(stored)  # issue 27's references
    assert (tmp_path / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    with get_client(sync_client=True) as client:
        [artifact, *_] = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["forecast-backtest"])))
    assert "data:image/png;base64," in str(artifact.data) and "real-time revisions" in str(artifact.data)


def test_the_shipped_lane_questions_are_relative_to_the_run_and_name_only_fetchable_series(db):
    """Issue 13 (2): data/forecast_lane.json holds no dates (targets and deadlines follow the run and the data
    it fetched) and names only registered FRED series of a frequency the lane can derive a target for."""
    from forum_atlas.forecasting.lane import load_questions
    from forum_atlas.resources import data_file

    questions = load_questions(data_file("forecast_lane.json"))
    with db.connection() as conn:
        registry = series_registry(conn)
    assert questions and all(q.target_date is None and q.deadline is None for q in questions)
    assert {registry.info(q.series_id).frequency for q in questions} <= {"monthly", "quarterly"}


def test_a_log_v1_backfill_over_the_demo_run_twice_inserts_once_and_accuracy_shows_both_versions(
        prefect_env, atlas_env, db, capsys):
    """Issue 24 (5), through the CLI as a data engineer would type it."""
    from forum_atlas.cli.forecast_demo import run_forecast_demo
    from forum_atlas.cli.main import main

    run_forecast_demo()

    def scores():
        with db.connection() as conn:
            return conn.execute("SELECT * FROM forum.forecast_scores ORDER BY score_id").fetchall()

    demo_scores = scores()
    assert {s["scoring_version"] for s in demo_scores} == {SCORING_VERSION} and len(demo_scores) == 3
    capsys.readouterr()
    backfill = ["score", "backfill", "--version", "log-v1", "--from", "2025-01-01", "--to", "2026-01-01"]
    assert main(backfill) == 0
    first = capsys.readouterr().out
    assert main(backfill) == 0
    second = capsys.readouterr().out
    assert (_measure(first, "inserted"), _measure(first, "reproduced")) == ("3", "0"), first
    assert (_measure(second, "inserted"), _measure(second, "reproduced")) == ("0", "3"), second
    after = scores()
    assert after[:3] == demo_scores, "the brier-v1 scores are untouched"
    assert [(s["scoring_version"], s["status"], s["brier"] is None, s["log_score"] is None) for s in after[3:]] == \
        [("log-v1", "resolved", True, False)] * 2 + [("log-v1", "unresolvable", True, True)]
    resolved_log = next(s for s in after[3:] if s["status"] == "resolved")
    assert main(["forecast", "show", str(resolved_log["forecast_id"])]) == 0
    assert f"log-v1    2026-03 #{resolved_log['vintage_id']}" in capsys.readouterr().out   # the version's row is listed
    assert main(["accuracy", "--version", "log-v1"]) == 0
    log_report = capsys.readouterr().out
    assert main(["accuracy"]) == 0
    default_report = capsys.readouterr().out
    assert "log-v1 (log)" in log_report and "mean log score (nats)" in log_report
    for report in (log_report, default_report):
        assert _measure(report, "version brier-v1 (default)").startswith("3 scored, 2 resolved, mean brier 0."), report
        assert _measure(report, "version log-v1").startswith("3 scored, 2 resolved, mean log 0."), report


def _measure(table: str, name: str) -> str:
    """The value of a measure in a printed two-column table."""
    [value] = [line[len(name):].strip() for line in table.splitlines() if line.startswith(name + "  ")]
    return value


def test_the_backfill_deployment_s_quick_run_scores_every_due_forecast_lacking_the_default_version(
        prefect_env, atlas_env, db, shared_data):
    """Issue 24 (6): the deployment's own parameters (a Quick run) used to name a 2025 range, so it scored nothing
    due later; now they score every due forecast in the default version."""
    from forum_atlas.flows.backfill_scores import BackfillParameters, backfill_scores
    from forum_atlas.tasks.forecasting import issue_bound_forecast

    series = shared_data / "series"
    load_series_files(db, [series / "UNRATE__fred_vintage_2025-04.csv"])
    issued = issue_bound_forecast(db, LaneQuestion(key="unrate-dec", series_id="UNRATE", comparator=">",
                                                   reference="previous", target_date=date(2025, 12, 1),
                                                   deadline=datetime(2026, 2, 1, tzinfo=UTC)),
                                  datetime(2025, 4, 15, tzinfo=UTC), None, seed=3)
    load_series_files(db, [series / "UNRATE__fred_vintage_2026-03.csv"])
    assert backfill_scores(BackfillParameters(deadline_from=date(2025, 1, 1), deadline_to=date(2026, 1, 1)))["due"] == 0
    quick = backfill_scores(**backfill_scores.validate_parameters(_deployment("backfill-scores").get("parameters") or {}))
    again = backfill_scores()
    assert (quick["scoring_version"], quick["due"], quick["inserted"]) == (SCORING_VERSION, 1, 1)
    assert (again["inserted"], again["reproduced"]) == (0, 1)
    with db.connection() as conn:
        assert repo.forecast_state(conn, issued["forecast_id"], SCORING_VERSION) == "resolved"


def _monthly_csv(path: Path, last: date) -> Path:
    """A FRED-style monthly series from 2020-01 through `last`."""
    from forum_atlas.forecasting.lane import shift_months

    rows, day = [], date(2020, 1, 1)
    while day <= last:
        rows.append(f"{day},{4 + (day.month % 3) / 10:.1f}")
        day = shift_months(day, 1)
    path.write_text("observation_date,UNRATE\n" + "\n".join(rows) + "\n")
    return path


def test_a_live_lane_run_that_finds_everything_bound_fetches_nothing(prefect_env, atlas_env, db, monkeypatch,
                                                                     tmp_path):
    """Issue 24 (6): the first live run fetches (the question is not bound yet) and binds this month; the second
    finds it bound to a period still running, so no new vintage can bind anything: it asks FRED nothing."""
    from forum_atlas.flows.bind_forecasts import LaneParameters, bind_forecasts
    from forum_atlas.forecasting.lane import shift_months
    from tests.support.wire import Reply, WireServer

    this_month = datetime.now(UTC).date().replace(day=1)
    body = _monthly_csv(tmp_path / "unrate.csv", shift_months(this_month, -1)).read_text()
    question = [{"key": "unrate-up", "series_id": "UNRATE", "comparator": ">", "reference": "previous"}]
    with WireServer() as srv:
        srv.always("/graph/fredgraph.csv", Reply(200, body, headers={"Content-Type": "text/csv"}))
        monkeypatch.setenv("ATLAS_FRED_CSV_BASE", srv.url)
        monkeypatch.delenv("FRED_API_KEY", raising=False)
        first = bind_forecasts(LaneParameters(questions=question))
        fetched_first = len(srv.requests_to("/graph/fredgraph.csv"))
        second = bind_forecasts(LaneParameters(questions=question))
        fetched_second = len(srv.requests_to("/graph/fredgraph.csv")) - fetched_first
    assert [(r["status"], r.get("deadline", "")[:7]) for r in first] == \
        [("bound", str(shift_months(this_month, 1) + timedelta(days=45))[:7])]
    assert [r["status"] for r in second] == ["already bound"]
    assert (fetched_first, fetched_second) == (1, 0)
    with db.connection() as conn:
        assert len(repo.list_vintages(conn)) == 1


def test_the_backfill_form_offers_every_registered_version_and_needs_nothing_filled_in():
    from forum_atlas.flows.backfill_scores import backfill_scores
    from forum_atlas.scoring.versions import DEFAULT_VERSION, SCORING_RULES

    schema = backfill_scores.parameters.model_dump()
    form = schema["definitions"]["BackfillParameters"]
    version = form["properties"]["scoring_version"]
    assert (version["enum"], version["default"]) == (list(SCORING_RULES), DEFAULT_VERSION) and version["description"]
    assert not form.get("required") and "params" not in schema.get("required", [])
