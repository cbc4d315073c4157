"""How the CLI runs flows: against PREFECT_API_URL when one is configured, otherwise against a
temporary Prefect API server of its own that cannot outlive the command.

Prefect's built-in temporary server is a plain child process: a CLI killed with kill -9 left it
running (~200 MB each). This one is started the same way (uvicorn on loopback, UI off) but asks
the kernel to send it SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG, Linux), and it is
stopped on every normal exit, after the runs' queued logs and events were sent. Flow heartbeats are off: the CLI waits for its flows anyway, and the
heartbeat thread only adds ~1 s at exit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

_PR_SET_PDEATHSIG = 1


@contextmanager
def flow_session() -> Iterator[None]:
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with ExitStack() as stack:
        updates = {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
        if not PREFECT_API_URL.value():
            updates[PREFECT_API_URL] = stack.enter_context(temporary_api_server())
            stack.callback(send_what_is_queued)   # before the server stops
        stack.enter_context(temporary_settings(updates=updates))
        yield


def send_what_is_queued(timeout: float = 10.0) -> None:
    """Prefect sends run logs and events (the task runs' states among them) from background workers: send
    what they still hold, or a run's last log lines and states never reach the server."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=timeout)
    EventsWorker.drain_all(timeout=timeout)


@contextmanager
def temporary_api_server() -> Iterator[str]:
    """A Prefect API on a free loopback port for the life of this process; yields its API URL."""
    import prefect
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, get_current_settings

    port = free_port()
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
           **get_current_settings().to_environment_variables(exclude_unset=True)}
    env.pop("PREFECT_API_URL", None)
    # The server's own output (its shutdown logs tracebacks of cancelled tasks) goes to a temporary file,
    # shown only if it fails to start: a command's output stays the command's.
    server_output = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "error", "--lifespan", "on"],
        env=env, stdin=subprocess.DEVNULL, stdout=server_output, stderr=server_output,
        preexec_fn=_die_with(os.getpid()))
    url = f"http://127.0.0.1:{port}/api"
    try:
        timeout = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
        try:
            wait_until_healthy(url, lambda: process.poll() is None, timeout, "the temporary Prefect API server")
        except RuntimeError as failed:
            server_output.seek(0)
            failed.add_note(server_output.read()[-2000:].decode("utf-8", "replace"))
            raise
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        server_output.close()


def _die_with(parent: int):
    """What the child runs between fork and exec: SIGTERM when the parent dies, even by SIGKILL. The
    library is loaded before the fork, so the child only makes two system calls (no locks taken)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:   # the parent died before the signal was armed
            os._exit(1)
    return arm


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
