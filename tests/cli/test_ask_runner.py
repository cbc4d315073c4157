"""Issue 25, item 2: `atlas ask` is a thin client of a warm flow runner (runtime/flow_runner.py). Its asks are
real Prefect flow runs (task runs, artifacts) on the shared local API, one runner serves the commands of one
environment and stops when idle, and a runner killed with kill -9 mid-run leaves no half-written brief and
does not stop the next ask. Real processes, the real database, the real Prefect server."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from forum_atlas.run_names import brief_key
from forum_atlas.runtime.pgserver import pid_alive
from tests.flows.test_deliberate import CHAT, QUESTION, TRIAL, _completion
from tests.flows.test_deliberate_outage import SEALED, _closed_port_url, _count
from tests.support.corpus import ingest, record
from tests.support.wire import Reply, WireServer

IDLE_SECONDS = 8   # long enough that the API runs on between a test's commands, even on a loaded machine
STOP_BOUND_SECONDS = 15   # after the idle period: the 1 s checks of the runner and the API, then their stop


@pytest.fixture
def env(database_url, db, tmp_path) -> dict[str, str]:
    ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health"),
                record("solar", "Solar panels degrade slowly in desert climates.", title="Solar", sector="energy")])
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PREFECT_API", "ATLAS_", "OPENAI_")) and k != "PREFECT_HOME"}
    return {**base, "ATLAS_DATABASE_URL": database_url, "ATLAS_DATA_DIR": str(tmp_path / "data"),
            "ATLAS_EMBEDDER": "hashed", "ATLAS_LLM": "offline", "PREFECT_HOME": str(tmp_path / "prefect"),
            "ATLAS_IDLE_SECONDS": str(IDLE_SECONDS), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180"}


def _atlas(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def _runners(home: Path, **environment: str) -> list[int]:
    """The pids of the flow runners whose socket is in this Prefect home (and whose environment has these)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            if b"forum_atlas.runtime.flow_runner" not in command or str(home).encode() not in command:
                continue
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(f"{k}={v}".encode() in variables for k, v in environment.items()) and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(map(pid_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(map(pid_alive, pids))


def _api_pid(home: Path) -> int:
    return json.loads((home / "atlas-api.json").read_text())["pid"]


def test_asks_are_flow_runs_of_one_warm_runner_which_stops_when_idle(env, db, tmp_path):
    home = tmp_path / "prefect"
    first = _atlas(env, "ask", QUESTION)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.startswith("Brief #") and first.stderr == ""
    api = _api_pid(home)

    html = tmp_path / "brief.html"
    second = _atlas(env, "ask", QUESTION, "--json", "--html", str(html))
    assert second.returncode == 0, second.stderr[-2000:]
    brief = json.loads(second.stdout)
    assert "hip fracture" in html.read_text(encoding="utf-8")
    # what the runner rendered is what the command renders from the stored brief
    shown = _atlas(env, "brief", "show", str(brief["brief_id"]), "--json")
    assert shown.returncode == 0 and shown.stdout == second.stdout

    # a command of another environment (here another engine setting) gets a runner of its own
    other = _atlas({**env, "ATLAS_SUPPORT_VERIFIER": "rules"}, "ask", QUESTION)
    assert other.returncode == 0, other.stderr[-2000:]

    assert _gone(_runners(home) + [api], IDLE_SECONDS + STOP_BOUND_SECONDS), "a runner or the API outlived idleness"
    assert not list(home.glob("*.sock"))
    # two runners, one per environment; the first answered both asks of its environment
    answered = sorted(log.read_text().count(" answered in ") for log in home.glob("atlas-runner-*.log"))
    assert answered == [1, 2]
    # the asks were Prefect flow runs, recorded by the shared API with their task runs and artifacts
    with sqlite3.connect(f"file:{home / 'prefect.db'}?mode=ro", uri=True) as prefect:
        runs = prefect.execute("SELECT id, state_type FROM flow_run WHERE name IS NOT NULL AND flow_id IN "
                               "(SELECT id FROM flow WHERE name = 'deliberate')").fetchall()
        assert len(runs) == 3 and {state for _, state in runs} == {"COMPLETED"}
        run_id = brief["flow_run_id"]
        assert prefect.execute("SELECT count(*) FROM task_run WHERE flow_run_id = ?", (run_id,)).fetchone()[0] >= 5
        assert {key for (key,) in prefect.execute("SELECT key FROM artifact WHERE flow_run_id = ?", (run_id,))} \
            == {brief_key(brief["brief_id"], QUESTION), f"brief-{brief['brief_id']}-audit", "brief-index"}
    assert _count(db, "briefs") == 3


def test_a_runner_killed_mid_run_seals_nothing_and_the_next_ask_works(env, db, tmp_path):
    home = tmp_path / "prefect"
    # an outage through the runner reads as it does when the command runs the flow itself (test_deliberate_outage)
    outage = {**env, "OPENAI_API_KEY": "sk-test-not-a-secret", "OPENAI_BASE_URL": _closed_port_url()}
    failed = _atlas(outage, "ask", QUESTION, "--engine", "openai", "--persona", "technical")
    assert failed.returncode == 1 and failed.stdout == ""
    (line,) = failed.stderr.splitlines()
    assert line.startswith("atlas: error:") and "could not be reached (unavailable after 3 attempts)" in line
    assert "no brief was sealed" in line

    reached, release = threading.Event(), threading.Event()

    def hang(received):   # the draft's call: the run is under way, its evidence gathered, nothing sealed yet
        reached.set()
        release.wait(120)
        return Reply(200, _completion({"claims": []}))

    with WireServer() as engine:
        engine.always(CHAT, hang)
        hanging = {**outage, "OPENAI_BASE_URL": engine.url + "/v1"}
        ask = subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ask", QUESTION, "--engine", "openai",
                                "--persona", "technical"], env=hanging, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            assert reached.wait(300), ask.stderr.read() if ask.poll() is not None else "the run never called the engine"
            (runner,) = _runners(home, OPENAI_BASE_URL=hanging["OPENAI_BASE_URL"])
            os.kill(runner, signal.SIGKILL)
            out, err = ask.communicate(timeout=60)
        finally:
            release.set()
            if ask.poll() is None:
                ask.kill()
    assert ask.returncode == 1 and out == ""
    (line,) = err.splitlines()
    assert line.startswith("atlas: error: the flow runner ended before it answered")
    assert {t: _count(db, t) for t in SEALED if t != "provider_calls"} == dict.fromkeys(
        (t for t in SEALED if t != "provider_calls"), 0)

    # the next ask of that environment starts a new runner (the killed one left its socket file behind)
    again = _atlas(hanging, "ask", QUESTION)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.startswith("Brief #")
    assert _count(db, "briefs") == 1
    assert _gone(_runners(home) + [_api_pid(home)], IDLE_SECONDS + STOP_BOUND_SECONDS)

