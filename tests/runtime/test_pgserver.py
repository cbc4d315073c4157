"""The embedded server: concurrent start-up, and no immortal server after a client is killed."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from forum_atlas.runtime.pgserver import pid_alive

REPO = Path(__file__).resolve().parents[2]
STOP_BOUND_SECONDS = 10   # docs/operations.md's bound after the idle period: the watchdog's interval, then a fast stop
CLIENT = """
import sys, time, psycopg
from pathlib import Path
from forum_atlas.runtime.pgserver import embedded_url
url = embedded_url(Path(sys.argv[1]))
with psycopg.connect(url) as conn:
    print(conn.execute("SELECT 40 + 2").fetchone()[0], flush=True)
time.sleep(float(sys.argv[2]))
"""


def _client(pgdata: Path, linger: float, idle_seconds: float = 0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLIENT, str(pgdata), str(linger)], cwd=REPO,
                            env={**os.environ, "ATLAS_IDLE_SECONDS": str(idle_seconds)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_stop(pgdata: Path, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not (pgdata / "postmaster.pid").exists():
            return True
        time.sleep(0.2)
    return False


def test_several_processes_can_start_the_same_server_at_once(tmp_path):
    pgdata = tmp_path / "pgdata"
    clients = [_client(pgdata, 0.5) for _ in range(4)]
    outputs = [c.communicate(timeout=120) for c in clients]
    assert [c.returncode for c in clients] == [0, 0, 0, 0], [err[-500:] for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == ["42"] * 4
    assert _wait_for_stop(pgdata), "the server stops when its last client exits"


def test_a_killed_client_does_not_keep_the_server_alive(tmp_path):
    """Issue 25 (4): the server of a client killed with SIGKILL stops by itself — its watchdog sees no live
    client left — within the stated bound after the idle period, with no other command run on the data directory."""
    from forum_atlas.runtime.pgserver import WATCH_INTERVAL_SECONDS

    pgdata, idle = tmp_path / "pgdata", 2
    victim = _client(pgdata, 60, idle)
    assert victim.stdout.readline().strip() == "42"
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    watchdog = int((pgdata / ".atlas_watchdog.pid").read_text())
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed_at = time.monotonic()
    assert _wait_for_stop(pgdata, seconds=idle + STOP_BOUND_SECONDS), "the server outlived its killed client"
    deadline = killed_at + idle + STOP_BOUND_SECONDS
    while (pid_alive(postmaster) or pid_alive(watchdog)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(postmaster) and not pid_alive(watchdog)
    assert WATCH_INTERVAL_SECONDS < STOP_BOUND_SECONDS


def test_the_server_waits_the_idle_period_for_the_next_client(tmp_path):
    """The next command joins the running server instead of paying its start and stop."""
    pgdata = tmp_path / "pgdata"
    first = _client(pgdata, 0, idle_seconds=60)
    assert first.communicate(timeout=120)[0].strip() == "42"
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    second = _client(pgdata, 0, idle_seconds=60)
    assert second.communicate(timeout=120)[0].strip() == "42"
    assert int((pgdata / "postmaster.pid").read_text().split()[0]) == postmaster, "the second client joined it"
    # a deleted data directory ends its server at once, idle period or not (the server removes files meanwhile)
    shutil.rmtree(pgdata, ignore_errors=True)
    deadline = time.monotonic() + STOP_BOUND_SECONDS
    while pid_alive(postmaster) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(postmaster)

    survivor = _client(pgdata, 0)   # the data directory starts again as usual
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0 and out.strip() == "42", err[-500:]
    assert _wait_for_stop(pgdata)


def test_a_data_dir_with_a_space_works(tmp_path):
    """It was refused (the path reached pg_ctl's shell unquoted); its socket now goes to the runtime directory."""
    pgdata = tmp_path / "with space" / "pgdata"
    clients = [_client(pgdata, 0.5) for _ in range(2)]
    outputs = [c.communicate(timeout=120) for c in clients]
    assert [out.strip() for out, _ in outputs] == ["42", "42"], [err[-500:] for _, err in outputs]
    assert _wait_for_stop(pgdata)
