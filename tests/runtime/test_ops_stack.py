"""`atlas ops`' pieces that need no Prefect server: the stack's record, and the process that holds the embedded
PostgreSQL open for the stack's lifetime."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from forum_atlas.config import settings_from_env
from forum_atlas.runtime.stack_state import Stack, read_stack, save_stack, state_file

REPO = Path(__file__).resolve().parents[2]
IDLE = 3   # seconds
JOIN = """
import sys, psycopg
from pathlib import Path
from forum_atlas.runtime.pgserver import embedded_url
with psycopg.connect(embedded_url(Path(sys.argv[1]))) as conn:
    print(conn.execute("SELECT 40 + 2").fetchone()[0])
"""


def test_the_stack_record_is_written_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    settings = settings_from_env()
    assert read_stack(settings) is None
    state_file(settings).parent.mkdir(parents=True)
    stack = Stack(api_url="http://127.0.0.1:4242/api", project_dir="/p", logs="/l", pids={"server": 7, "worker": 9})
    save_stack(settings, stack)
    assert read_stack(settings) == stack and list(read_stack(settings).pids) == ["server", "worker"]
    assert stack.ui_url == "http://127.0.0.1:4242"


def _stopped(pgdata: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while (pgdata / "postmaster.pid").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_the_holder_keeps_the_embedded_server_up_between_runs_and_it_stops_after_sigterm(tmp_path):
    # a short idle period: without a holder the server would stop IDLE seconds after the run below has left
    env = {**os.environ, "ATLAS_DATA_DIR": str(tmp_path), "ATLAS_IDLE_SECONDS": str(IDLE)}
    env.pop("ATLAS_DATABASE_URL", None)
    pgdata = tmp_path / "pgdata"
    holder = subprocess.Popen([sys.executable, "-m", "forum_atlas.runtime.ops_stack", "hold-database"], cwd=REPO,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert holder.stdout.readline().strip() == f"holding the embedded PostgreSQL in {pgdata}"
        run = subprocess.run([sys.executable, "-c", JOIN, str(pgdata)], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.stdout.split() == ["42"], run.stderr
        assert not _stopped(pgdata, IDLE + 3) and holder.poll() is None
    finally:
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=60)
    assert _stopped(pgdata, 60)
