"""The embedded server: concurrent start-up, and no immortal server after a client is killed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT = """
import sys, time, psycopg
from pathlib import Path
from forum_atlas.store.pgserver import embedded_url
url = embedded_url(Path(sys.argv[1]))
with psycopg.connect(url) as conn:
    print(conn.execute("SELECT 40 + 2").fetchone()[0], flush=True)
time.sleep(float(sys.argv[2]))
"""


def _client(pgdata: Path, linger: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLIENT, str(pgdata), str(linger)], cwd=REPO,
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


def test_a_killed_client_does_not_keep_the_server_alive_forever(tmp_path):
    pgdata = tmp_path / "pgdata"
    victim = _client(pgdata, 60)
    assert victim.stdout.readline().strip() == "42"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert victim.pid in json.loads((pgdata / ".handle_pids.json").read_text())
    survivor = _client(pgdata, 0)
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0 and out.strip() == "42", err[-500:]
    assert _wait_for_stop(pgdata), "the dead client's pid was pruned, so the last live client stopped the server"
    assert not os.path.exists(pgdata / ".handle_pids.json") or victim.pid not in json.loads((pgdata / ".handle_pids.json").read_text())
