"""Issue 25 (2, 4): CLI commands that run flows share one local Prefect API per Prefect home (started once under
a lock, stopped after an idle period), use `atlas ops up`'s server when it runs, and leave nothing running
after they are killed: no embedded PostgreSQL and no Prefect server outlives the idle period by more than
the stated bound."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from forum_atlas.resources import data_file
from forum_atlas.runtime.pgserver import pid_alive

IDLE_SECONDS = 3
STOP_BOUND_SECONDS = 15   # after the idle period: the watchdogs' 1 s interval, then a stop (docs/operations.md)

FLOW = """
import json
from pathlib import Path
from prefect import flow
from prefect.settings import PREFECT_API_URL, PREFECT_HOME
from forum_atlas.runtime.prefect_api import flow_session

@flow
def answer():
    return 42

with flow_session():
    state = Path(PREFECT_HOME.value(), "atlas-api.json")   # the shared server's, if one runs
    print(PREFECT_API_URL.value(), answer(), json.loads(state.read_text())["pid"] if state.exists() else "-",
          flush=True)
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API") and k != "ATLAS_DATABASE_URL"}
    return {**env, "ATLAS_DATA_DIR": str(tmp_path / "data"), "PREFECT_HOME": str(tmp_path / "prefect"),
            "ATLAS_IDLE_SECONDS": str(IDLE_SECONDS), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
            "ATLAS_BM25_KERNEL": "off", **extra}


def _gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(map(pid_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(map(pid_alive, pids))


def _leases(home: Path) -> list[int]:
    try:
        return json.loads((home / "atlas-api.leases").read_text())
    except (OSError, ValueError):   # not written yet, or being written
        return []


def test_concurrent_first_commands_share_one_server_which_stops_when_idle(tmp_path):
    """On a new Prefect home, each command used to start a server of its own on the same new SQLite database,
    and their set-ups raced ("Online migration expected to match one row")."""
    env = _env(tmp_path)
    commands = [subprocess.Popen([sys.executable, "-c", FLOW], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(3)]
    outputs = [command.communicate(timeout=300) for command in commands]
    assert [command.returncode for command in commands] == [0, 0, 0], [err[-2000:] for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1, outputs   # one URL, one server
    url, answer, server = outputs[0][0].split()
    assert url.startswith("http://127.0.0.1:") and answer == "42"
    assert _gone([int(server)], IDLE_SECONDS + STOP_BOUND_SECONDS), "the shared server outlived its idle period"
    assert not (tmp_path / "prefect" / "atlas-api.json").exists()


def test_the_server_of_atlas_ops_up_is_used_when_it_runs(tmp_path, prefect_env):
    """A stack of `atlas ops up` for this data directory (its state file; here the session's Prefect API stands
    for its server): the command's runs go to it, and no shared server is started."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    stack = tmp_path / "data" / "ops" / "stack.json"
    stack.parent.mkdir(parents=True)
    stack.write_text(json.dumps({"api_url": PREFECT_API_URL.value(), "project_dir": str(tmp_path),
                                 "logs": str(tmp_path), "pids": {"server": os.getpid()}}))
    done = subprocess.run([sys.executable, "-c", FLOW], env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [PREFECT_API_URL.value(), "42", "-"]
    assert not (tmp_path / "prefect" / "atlas-api.json").exists()
    with get_client(sync_client=True) as client:
        assert "answer" in {f.name for f in client.read_flows()}


def test_a_killed_cli_command_leaves_no_database_or_prefect_server_behind(tmp_path):
    env = _env(tmp_path)
    cli = subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ingest",
                            str(data_file("sample", "scifact_sample.jsonl")), "--batch-size", "5", "--no-progress"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pgdata, home = tmp_path / "data" / "pgdata", tmp_path / "prefect"
    deadline = time.monotonic() + 300
    # kill it while its flow runs: it holds its lease on the shared API and the embedded server is up
    while not ((pgdata / "postmaster.pid").exists() and (pgdata / ".atlas_watchdog.pid").exists()
               and cli.pid in _leases(home)):
        assert cli.poll() is None, f"the command ended before it could be killed: {cli.stderr.read().decode()[-2000:]}"
        assert time.monotonic() < deadline, "the command never reached its flow"
        time.sleep(0.1)
    processes = {"postgres": int((pgdata / "postmaster.pid").read_text().split()[0]),
                 "database watchdog": int((pgdata / ".atlas_watchdog.pid").read_text()),
                 "prefect server": json.loads((home / "atlas-api.json").read_text())["pid"]}
    cli.send_signal(signal.SIGKILL)
    cli.wait()
    assert _gone(list(processes.values()), IDLE_SECONDS + STOP_BOUND_SECONDS), \
        {role: pid for role, pid in processes.items() if pid_alive(pid)}
    assert not (pgdata / "postmaster.pid").exists()
