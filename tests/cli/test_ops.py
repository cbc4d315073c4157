"""Issue 13 (6): `atlas ops up` starts a Prefect server on loopback, the work pool, the deployments and a
worker, with the embedded database held open; a deployment run through the worker completes; `atlas ops
down` leaves no process behind."""

import os
import subprocess
import sys

import httpx
import pytest

from forum_atlas.cli import ops_stack
from forum_atlas.cli.main import main
from forum_atlas.config import settings_from_env


@pytest.fixture
def ops_env(monkeypatch, tmp_path):
    for name in [k for k in os.environ if k.startswith("PREFECT_API") or k == "ATLAS_DATABASE_URL"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path / "atlas"))
    monkeypatch.setenv("ATLAS_BM25_KERNEL", "off")   # no kernel build in a throw-away data directory
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    yield settings_from_env()
    ops_stack.down(settings_from_env())


def test_ops_up_runs_a_deployment_through_its_worker_and_down_stops_everything(ops_env, capsys):
    assert main(["ops", "up"]) == 0
    out = capsys.readouterr().out
    stack = ops_stack.read_stack(ops_env)
    assert set(stack.pids) == {"database", "server", "worker"} and all(map(ops_stack.alive, stack.pids.values()))
    assert f"Prefect UI  {stack.ui_url}" in out and stack.api_url.startswith("http://127.0.0.1:")
    assert main(["ops", "up"]) == 0, "up again is a no-op"
    assert ops_stack.read_stack(ops_env).pids == stack.pids

    deployments = httpx.post(f"{stack.api_url}/deployments/filter", json={}, timeout=30).json()
    assert {"bind-forecasts", "score-accuracy", "ingest", "deliberate"} <= {d["name"] for d in deployments}
    env = {**os.environ, "PREFECT_API_URL": stack.api_url}
    run = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", "score-accuracy/score-accuracy",
                          "--watch", "--watch-timeout", "300"], env=env, capture_output=True, text=True, timeout=400)
    assert run.returncode == 0 and "Completed" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]

    assert main(["ops", "down"]) == 0
    assert "stopped: worker, server, database" in capsys.readouterr().out
    assert not any(map(ops_stack.alive, stack.pids.values())) and ops_stack.read_stack(ops_env) is None
    assert main(["ops", "status"]) == 1
