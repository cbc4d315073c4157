"""How the CLI runs flows: against PREFECT_API_URL when one is configured; else against the server of
`atlas ops up` for this data directory when it runs; else against the local Prefect API that every command
of this Prefect home (PREFECT_HOME) shares.

Each command used to start a temporary Prefect server of its own: 7–16 s per command, and concurrent first
commands raced on the set-up of the home's SQLite database. The shared API is one process (uvicorn serving
Prefect's app on a loopback port, UI off) that the first command needing it starts under a file lock in the
Prefect home, so a concurrent command waits for it instead of starting another. A command holds a lease (its
pid) while it runs; the server stops itself once no live process has held a lease for ATLAS_IDLE_SECONDS
(default 300; a command killed with kill -9 holds none), as the embedded PostgreSQL does. Flow heartbeats are
off: the CLI waits for its flows anyway, and the heartbeat thread only adds ~1 s at exit.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

_LOCK, _STATE, _LEASES, _LOG = "atlas-api.lock", "atlas-api.json", "atlas-api.leases", "atlas-api.log"
_SHUTDOWN_GRACE_SECONDS = 10
START_ATTEMPTS = 2   # a start that failed under load is tried once more (with the timeout measured anew)
# Prefect's logging configuration, overridden by environment: the level of its terminal handler
QUIET_CONSOLE = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


# Prefect settings built for a session, by the settings they were built from and the updates: building them
# validates every Prefect setting anew (pydantic-settings reads the environment): 1.1 s of a warm ask at load ~20.
# A flow runner serves many sessions with the same two updates.
_SESSION_SETTINGS: dict[tuple, tuple[object, object]] = {}


def _session_settings(updates: dict):
    import prefect.context

    base = prefect.context.get_settings_context()
    key = (id(base.settings), tuple(sorted((setting.name, repr(value)) for setting, value in updates.items())))
    cached = _SESSION_SETTINGS.get(key)
    if cached is None or cached[0] is not base.settings:   # an id reused by other settings is no match
        if len(_SESSION_SETTINGS) > 8:
            _SESSION_SETTINGS.clear()
        cached = _SESSION_SETTINGS[key] = (base.settings, base.settings.copy_with_update(updates=updates))
    return prefect.context.SettingsContext(profile=base.profile, settings=cached[1])


@contextmanager
def flow_session() -> Iterator[None]:
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY

    from forum_atlas.redaction import filter_all_handlers

    with ExitStack() as stack:
        updates = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
        if not PREFECT_API_URL.value():
            updates[PREFECT_API_URL] = _ops_server() or stack.enter_context(shared_api())
            stack.callback(send_what_is_queued)   # while the lease still keeps the server
        stack.enter_context(_session_settings(updates))
        filter_all_handlers()   # Prefect's console and API handlers exist now: run logs are redacted too
        yield


def send_what_is_queued(timeout: float = 10.0) -> None:
    """Prefect sends run logs and events (the task runs' states among them) from background workers: send
    what they still hold, or a run's last log lines and states never reach the server."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=timeout)
    EventsWorker.drain_all(timeout=timeout)


def _ops_server() -> str | None:
    """The API of `atlas ops up`'s server for this data directory, when it runs."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.runtime.stack_state import alive, read_stack

    stack = read_stack(settings_from_env())
    return stack.api_url if stack and alive(stack.pids.get("server", 0)) else None


def prefect_home() -> Path:
    from prefect.settings import PREFECT_HOME

    home = Path(PREFECT_HOME.value()).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


@contextmanager
def shared_api() -> Iterator[str]:
    """The URL of this Prefect home's shared API, started if none runs, leased for the life of the block."""
    home = prefect_home()
    with home_lock(home):
        url = _running_api(home) or _start_api(home)
        _leases(home, add=os.getpid())
    try:
        yield url
    finally:
        with home_lock(home):
            _leases(home, remove=os.getpid())


@contextmanager
def home_lock(home: Path) -> Iterator[None]:
    """The Prefect home's lock: who starts, joins, leaves or stops its shared API holds it (and `atlas ops up`
    while its server sets up the home's database)."""
    with open(home / _LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _leases(home: Path, *, add: int | None = None, remove: int | None = None) -> list[int]:
    """The pids holding a lease (dead ones dropped), after adding or removing one; call under the lock."""
    from forum_atlas.runtime.pgserver import pid_alive

    path = home / _LEASES
    try:
        pids = [pid for pid in json.loads(path.read_text()) if pid_alive(pid)]
    except (OSError, ValueError):
        pids = []
    if add is not None:
        pids.append(add)
    if remove in pids:
        pids.remove(remove)
    path.write_text(json.dumps(pids))
    return pids


def _running_api(home: Path) -> str | None:
    """The shared API's URL if its server runs (it records itself once it serves)."""
    try:
        state = json.loads((home / _STATE).read_text())
    except (OSError, ValueError):
        return None
    return state["url"] if _is_shared_server(state["pid"]) else None


def _is_shared_server(pid: int) -> bool:
    from forum_atlas.runtime.pgserver import pid_alive

    try:
        return pid_alive(pid) and b"forum_atlas.runtime.prefect_api" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _start_api(home: Path) -> str:
    """Start the shared API (under the lock) and return its URL once it answers; a failed start is tried again
    once. The wait is PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS scaled by the machine's load."""
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

    from forum_atlas.runtime.startup import load_aware_timeout

    def timeout() -> float:
        return load_aware_timeout(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())

    for _ in range(START_ATTEMPTS - 1):
        try:
            return _start_api_once(home, timeout())
        except RuntimeError as failed:
            logging.getLogger(__name__).warning(f"{failed}; starting it again")
    return _start_api_once(home, timeout())


def _start_api_once(home: Path, timeout: float) -> str:
    from prefect.settings import get_current_settings

    from forum_atlas.runtime.private_logs import open_private_log

    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
           **get_current_settings().to_environment_variables(exclude_unset=True)}
    env.pop("PREFECT_API_URL", None)
    (home / _STATE).unlink(missing_ok=True)
    # Its own session: the terminal's Ctrl-C stops the command, not the server other commands share. Its output
    # (its shutdown logs tracebacks of cancelled tasks) goes to a log file, shown only if it fails to start.
    with open_private_log(home / _LOG) as log:
        process = subprocess.Popen([sys.executable, "-m", "forum_atlas.runtime.prefect_api", "serve"], env=env,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while (url := _running_api(home)) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                exited = process.poll() is not None
                raise RuntimeError("the shared Prefect API server "
                                   + ("exited while starting" if exited else f"did not start within {timeout:.0f} s"))
            time.sleep(0.2)
        wait_until_healthy(url, lambda: process.poll() is None, timeout, "the shared Prefect API server")
    except RuntimeError as failed:
        process.kill()
        process.wait()
        failed.add_note((home / _LOG).read_bytes()[-2000:].decode("utf-8", "replace"))
        raise
    return url


def serve() -> None:
    """The shared API's process: Prefect's app on a free loopback port, recorded in the Prefect home once it
    serves, until no lease has been held for the idle period."""
    import uvicorn

    from forum_atlas.runtime.pgserver import idle_seconds
    from forum_atlas.runtime.private_logs import redact_this_process

    redact_this_process()

    home = prefect_home()
    server = uvicorn.Server(uvicorn.Config("prefect.server.api.server:create_app", factory=True, host="127.0.0.1",
                                           port=0, log_level="error", lifespan="on",
                                           timeout_graceful_shutdown=_SHUTDOWN_GRACE_SECONDS // 2))
    threading.Thread(target=_serve_while_leased, args=(server, home, idle_seconds()), daemon=True).start()
    server.run()


def _serve_while_leased(server, home: Path, idle: float) -> None:
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    state = home / _STATE
    state.with_suffix(".tmp").write_text(json.dumps({"pid": os.getpid(), "url": f"http://127.0.0.1:{port}/api"}))
    state.with_suffix(".tmp").replace(state)
    leased_at = time.monotonic()
    while True:
        time.sleep(1.0)
        try:
            with home_lock(home):
                if _leases(home):
                    leased_at = time.monotonic()
                    continue
                if time.monotonic() - leased_at < idle:
                    continue
                state.unlink(missing_ok=True)
                # The lock is held until this process ends (its exit releases it): a command that needs the API
                # meanwhile waits, then starts a new server — never one beside this one on the same database.
                _stop(server)
        except FileNotFoundError:   # the Prefect home was deleted (a temporary one): nothing can use it any more
            _stop(server)


def _stop(server) -> None:
    server.should_exit = True
    time.sleep(_SHUTDOWN_GRACE_SECONDS)
    os._exit(1)   # the graceful shutdown hung


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_healthy(url: str, running: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `url`/health until it answers 200; fail early if the server's process has exited."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        if not running():
            raise RuntimeError(f"{what} exited while starting")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer within {timeout:.0f} s")
        time.sleep(0.3)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
