"""Issue 39, item 3: an `atlas ask` killed while its run is under way cancels the run (nothing sealed, the flow
run Cancelled), and every process it caused — the warm runner, the shared Prefect API, the embedded PostgreSQL
and its watchdog — is gone ATLAS_IDLE_SECONDS + 15 s after it. The embedded database of a real data directory,
the real Prefect server."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from forum_atlas.config import settings_from_env
from forum_atlas.runtime.pgserver import pid_alive, stop_embedded
from forum_atlas.store.db import Database
from tests.cli.test_ask_runner import _api_pid, _gone, _runners
from tests.flows.test_deliberate import CHAT, QUESTION, TRIAL, _completion
from tests.flows.test_deliberate_outage import SEALED, _count
from tests.support.corpus import ingest, record
from tests.support.wire import Reply, WireServer

IDLE_SECONDS = 6
STOP_BOUND_SECONDS = 15


def _pid_in(path: Path) -> int:
    return int(path.read_text().split()[0])


def test_a_killed_ask_seals_nothing_and_leaves_no_process_behind(tmp_path):
    data, home = tmp_path / "data", tmp_path / "prefect"
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PREFECT_API", "ATLAS_", "OPENAI_")) and k != "PREFECT_HOME"}
    env = {**base, "ATLAS_DATA_DIR": str(data), "ATLAS_EMBEDDER": "hashed", "PREFECT_HOME": str(home),
           "ATLAS_IDLE_SECONDS": str(IDLE_SECONDS), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
           "OPENAI_API_KEY": "sk-test-not-a-secret"}
    settings = settings_from_env(env)
    with Database.open(settings) as db:   # the corpus, written by this process, which then leaves the server
        ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health")])
    stop_embedded(settings.pgdata)

    reached, release = threading.Event(), threading.Event()

    def hang(received):   # the draft's call: evidence gathered, nothing sealed yet
        reached.set()
        release.wait(120)
        return Reply(200, _completion({"claims": []}))

    with WireServer() as engine:
        engine.always(CHAT, hang)
        env["OPENAI_BASE_URL"] = engine.url + "/v1"
        ask = subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ask", QUESTION, "--engine", "openai",
                                "--persona", "technical"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert reached.wait(300), "the run never called the engine"
            runners = _runners(home)
            processes = {"runner": runners[0], "api": _api_pid(home), "postgres": _pid_in(settings.pgdata / "postmaster.pid"),
                         "watchdog": _pid_in(settings.pgdata / ".atlas_watchdog.pid")}
            ask.send_signal(signal.SIGKILL)
            ask.wait(30)
            killed_at = time.monotonic()
            time.sleep(1.0)   # the runner sees the connection close
        finally:
            release.set()   # the run goes on to its next step, where it stops
            if ask.poll() is None:
                ask.kill()
    log = next(home.glob("atlas-runner-*.log"))
    deadline = time.monotonic() + 120
    while "cancelled (its command went away)" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "cancelled (its command went away)" in log.read_text(), log.read_text()[-2000:]

    left = IDLE_SECONDS + STOP_BOUND_SECONDS - (time.monotonic() - killed_at)
    assert _gone(list(processes.values()), left), {name: pid for name, pid in processes.items() if pid_alive(pid)}

    with sqlite3.connect(f"file:{home / 'prefect.db'}?mode=ro", uri=True) as prefect:
        states = [s for (s,) in prefect.execute("SELECT state_type FROM flow_run WHERE flow_id IN "
                                                "(SELECT id FROM flow WHERE name = 'deliberate')")]
    assert states == ["CANCELLED"]
    with Database.open(settings) as db:
        assert {t: _count(db, t) for t in SEALED if t != "provider_calls"} == dict.fromkeys(
            (t for t in SEALED if t != "provider_calls"), 0)
    stop_embedded(settings.pgdata)
