"""Issue 10 (6): no process outlives a killed CLI run. The CLI's temporary Prefect API server (used when
no PREFECT_API_URL is set) dies with it, even when the CLI is killed with SIGKILL."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from forum_atlas.resources import data_file
from tests.support.processes import children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_a_killed_cli_run_leaves_no_prefect_server_behind(database_url, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(ATLAS_DATABASE_URL=database_url, ATLAS_EMBEDDER="hashed", PREFECT_HOME=str(tmp_path / "prefect"),
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120")
    cli = subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ingest", str(data_file("sample", "scifact_sample.jsonl")),
                            "--batch-size", "20", "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    servers: list[int] = []
    while not servers:
        assert cli.poll() is None, f"the CLI ended before it could be killed: {cli.stderr.read().decode()[-2000:]}"
        assert time.monotonic() < deadline, "no Prefect server child appeared"
        servers = [p for p in children(cli.pid) if "uvicorn" in _cmdline(p) and "prefect" in _cmdline(p)]
        time.sleep(0.2)
    time.sleep(1.0)   # let the flow start talking to it
    cli.send_signal(signal.SIGKILL)
    cli.wait()
    gone_by = time.monotonic() + 10
    while any(_alive(p) for p in servers) and time.monotonic() < gone_by:
        time.sleep(0.1)
    assert not any(_alive(p) for p in servers), f"still running 10 s after kill -9: {servers}"
