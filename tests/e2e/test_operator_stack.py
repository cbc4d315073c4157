"""Issue 13, first "Done when": the operator's stack for real — a Prefect server on loopback, the
deployments from prefect.yaml (what deployments/deploy.sh runs: `atlas ops deploy`), a process worker —
and then:

- two lane runs started at once both end Completed, and every question is bound once;
- the nightly deployment, run with its shipped parameters against a local stand-in for FRED's CSV
  export, loads a new vintage, scores on it and publishes table, markdown and image artifacts;
- a redeploy leaves a resumed lane resumed;
- a failing nightly run raises the alert the deployments declare (a webhook notification).
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import httpx
import pytest
from prefect.settings import PREFECT_API_URL, temporary_settings

from forum_atlas.cli import ops_stack
from forum_atlas.cli.main import main
from forum_atlas.config import settings_from_env
from forum_atlas.forecasting.lane import load_questions
from forum_atlas.resources import data_file
from forum_atlas.store import forecasts as repo
from forum_atlas.tasks.forecasting import issue_bound_forecast
from tests.e2e.fred_standin import FredCsvStandIn
from tests.support.wire import Reply, WireServer

FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
RUN_TIMEOUT_S = 240


@pytest.fixture
def fred(shared_data):
    series = shared_data / "series"
    with FredCsvStandIn({"UNRATE": series / "UNRATE__fred_vintage_2026-03.csv",
                         "CPIAUCSL": series / "CPIAUCSL__fred_vintage_2026-03.csv",
                         "FEDFUNDS": series / "FEDFUNDS__fred_vintage_2025-04.csv"}) as standin:
        yield standin


@pytest.fixture
def alerts():
    """Where the nightly-failure notification is sent (a Slack-style incoming webhook)."""
    with WireServer() as receiver:
        receiver.always("/alert", Reply(200, {"ok": True}))
        yield receiver


@pytest.fixture
def stack(monkeypatch, tmp_path, database_url, fred, alerts):
    """`atlas ops up` on a fresh Prefect home, its flow runs writing to this test's database and fetching from
    the stand-in; torn down (every process of it) whatever the test did."""
    for name in [k for k in os.environ if k.startswith("PREFECT_API")]:
        monkeypatch.delenv(name)
    environment = {
        "ATLAS_DATA_DIR": str(tmp_path / "atlas"), "ATLAS_DATABASE_URL": database_url, "ATLAS_LLM": "offline",
        "ATLAS_FRED_CSV_BASE": fred.url, "ATLAS_ALERT_WEBHOOK_URL": f"{alerts.url}/alert",
        "PREFECT_HOME": str(tmp_path / "prefect"),
        "PREFECT_UI_ENABLED": "false", "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        # a run that waits for the lane's slot (ENQUEUE) retries after 1 s instead of 30; the worker polls each second
        "PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS": "1", "PREFECT_WORKER_QUERY_SECONDS": "1",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FRED_API_KEY", raising=False)
    settings = settings_from_env()
    try:
        started = ops_stack.up(settings)
        # for `atlas lane …` in this process: the variable for its check, the settings for Prefect's client
        # (which read the environment once, at import)
        monkeypatch.setenv("PREFECT_API_URL", started.api_url)
        with temporary_settings(updates={PREFECT_API_URL: started.api_url}):
            yield started
    finally:
        pids = (ops_stack.read_stack(settings) or ops_stack.Stack("", "", "")).pids
        ops_stack.down(settings)
        assert not [role for role, pid in pids.items() if ops_stack.alive(pid)], "a process of the stack outlived it"


def _api(stack, method: str, path: str, **body) -> httpx.Response:
    # the server answers 503 while its SQLite database is busy; Prefect's own client retries those too
    for attempt in range(10):
        response = httpx.request(method, f"{stack.api_url}{path}", json=body or None, timeout=30)
        if response.status_code != 503:
            break
        time.sleep(0.5 * (attempt + 1))
    response.raise_for_status()
    return response


def _start(stack, deployment: str, **parameters) -> str:
    """A run of the deployment with the parameters it ships with (as the UI's "Quick run"), or with others."""
    deployment_id = _api(stack, "GET", f"/deployments/name/{deployment}").json()["id"]
    return _api(stack, "POST", f"/deployments/{deployment_id}/create_flow_run", state={"type": "SCHEDULED"},
                **({"parameters": parameters} if parameters else {})).json()["id"]


def _wait(stack, run_ids: list[str]) -> dict[str, dict]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        found = _api(stack, "POST", "/flow_runs/filter", flow_runs={"id": {"any_": run_ids}}).json()
        runs = {r["id"]: r for r in found}
        if all(r["state_type"] in FINAL for r in runs.values()) or time.monotonic() > deadline:
            return runs
        time.sleep(0.5)


def _artifacts(stack, run_id: str) -> dict[str, dict]:
    found = _api(stack, "POST", "/artifacts/filter", artifacts={"flow_run_id": {"any_": [run_id]}}).json()
    return {a["key"]: a for a in found}


def _seed_due_bindings(db, shared_data) -> list[str]:
    """Forecasts the lane bound in April 2025 on that month's downloads: long past their deadline now."""
    issued = datetime(2025, 4, 15, tzinfo=timezone.utc)
    repo.load_series_files(db, [shared_data / "series" / f"{sid}__fred_vintage_2025-04.csv"
                                for sid in ("UNRATE", "CPIAUCSL")])
    shipped = [q for q in load_questions(data_file("forecast_lane.json")) if q.series_id in ("UNRATE", "CPIAUCSL")]
    return [issue_bound_forecast(db, spec, issued, run_id=None, seed=1)["key"] for spec in shipped]


def test_lane_twice_at_once_nightly_with_shipped_parameters_a_redeploy_and_the_alert(
        stack, db, shared_data, alerts, capsys):
    seeded = _seed_due_bindings(db, shared_data)
    lanes = [_start(stack, "bind-forecasts/bind-forecasts") for _ in range(2)]
    nightly = _start(stack, "score-accuracy/score-accuracy")

    # while the worker runs them: the documented resume, then a redeploy of the lane, which must keep it active
    assert main(["lane", "resume"]) == 0
    with ThreadPoolExecutor(1) as background:
        redeploy = background.submit(ops_stack.deploy_all, settings_from_env(), stack, ["bind-forecasts"])
        _wait(stack, [nightly])
        redeployed = redeploy.result(timeout=RUN_TIMEOUT_S)
    # a nightly run that fails (here: a report directory it cannot create; the server itself refuses
    # parameters outside the schema) must raise the alert; one nightly at a time (CANCEL_NEW), so after the first
    failing = _start(stack, "score-accuracy/score-accuracy", params={"report_dir": "/proc/atlas"})
    capsys.readouterr()
    assert redeployed[0] == "bind-forecasts/bind-forecasts: active (kept)", redeployed
    assert main(["lane", "status", "--state"]) == 0 and capsys.readouterr().out.strip() == "active"

    runs = _wait(stack, [*lanes, nightly, failing])
    states = {r["name"]: (r["state_type"], (r.get("state") or {}).get("message")) for r in runs.values()}
    assert [runs[run_id]["state_type"] for run_id in (*lanes, nightly, failing)] == \
        ["COMPLETED", "COMPLETED", "COMPLETED", "FAILED"], (states, stack.logs)

    with db.connection() as conn:
        bindings = conn.execute("SELECT question_key, target_date, count(*) AS n FROM forum.forecast_bindings "
                                "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
        vintages = {v["vintage_id"]: v for v in repo.list_vintages(conn)}
        scores = conn.execute("SELECT forecast_id, status, vintage_id FROM forum.forecast_scores").fetchall()
    shipped_keys = {q.key for q in load_questions(data_file("forecast_lane.json"))}
    assert all(b["n"] == 1 for b in bindings), bindings
    live = [b for b in bindings if b["target_date"].year >= 2026]
    assert {b["question_key"] for b in live} == shipped_keys, "each shipped question bound once, by one of the runs"
    tables = [json.loads(_artifacts(stack, run_id)["bound-forecasts"]["data"]) for run_id in lanes]
    statuses = sorted(sorted({row["status"] for row in table}) for table in tables)
    assert statuses == [["already bound"], ["bound"]], "the second run found the first one's bindings"

    # the nightly fetched the two series with due bindings from the stand-in, as new vintages, and scored on
    # fetched vintages (its own, or a lane's fetched just before: the stand-in revises every answer)
    published = _artifacts(stack, nightly)
    fetched = {row["series_id"]: row for row in json.loads(published["nightly-fetch"]["data"])}
    assert sorted(fetched) == ["CPIAUCSL", "UNRATE"] and {row["kind"] for row in fetched.values()} == {"ok"}
    assert {vintages[int(row["vintage_id"])]["connector"] for row in fetched.values()} == {"fred-csv"}
    assert len(scores) == len(seeded) and {s["status"] for s in scores} == {"resolved"}
    assert {vintages[s["vintage_id"]]["connector"] for s in scores} == {"fred-csv"}
    assert {"accuracy-table", "accuracy-report", "accuracy-reliability", "nightly-fetch"} <= set(published)
    assert {published[k]["type"] for k in ("accuracy-table", "accuracy-report", "accuracy-reliability")} == \
        {"table", "markdown", "image"}
    assert published["accuracy-reliability"]["data"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert "mean Brier" in published["accuracy-report"]["data"]

    deadline = time.monotonic() + 60
    while not alerts.requests_to("/alert") and time.monotonic() < deadline:
        time.sleep(0.5)
    [alert] = alerts.requests_to("/alert")
    assert "the nightly score failed" in alert.body["text"] and runs[failing]["name"] in alert.body["text"]
