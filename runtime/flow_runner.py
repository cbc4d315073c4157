"""A warm runner: a long-lived process that has a command's flows imported and runs them for thin clients.

A fresh `atlas ask` process spends seconds before its flow's ~50 ms of work: importing Prefect and the flow
modules (~1.5 s of CPU, 3–5 s of wall time on a loaded 2-core machine), loading the query embedder's model
(~0.7 s) and opening the database. The runner pays that once. The command sends its request over a Unix socket
in the Prefect home and prints the reply; the runner runs the flow in a thread of its own (a real Prefect flow
run, against the API `flow_session()` picks, with its task runs and artifacts) and answers.

Discipline, as for the shared Prefect API (prefect_api.py):
- One runner per target function, Prefect home, environment, working directory and code version: the key of
  its socket. A client whose environment differs (another ATLAS_DATA_DIR, engine or API key) gets a runner of
  its own, never one that would run with someone else's settings.
- Started on first need under a file lock in the Prefect home; a client connects and sends its request under
  the same lock, and the runner decides to stop under it, so a request never reaches a runner that is leaving.
- A client's open connection is its lease: the runner stops once no request has been in flight for
  ATLAS_IDLE_SECONDS (default 300), and it stops at once if its socket file goes (the home was deleted). The
  runner is a client of the embedded database, which stops its own idle period later: up to twice
  ATLAS_IDLE_SECONDS after the last ask. The shared Prefect API is leased per request only.
- The runner acknowledges a request before running it. No acknowledgement (the runner stopped or was killed
  first): the client starts a new runner and sends it again. Acknowledged but no answer (the runner was killed
  mid-run): RunnerLost, exit 1. A brief is written in one transaction, so such a kill leaves none half-written.
- A command stopped with Ctrl-C (or killed) while it waits cancels its run: the runner sees the connection close,
  the run stops at its next step and never seals its brief (its flow run ends Cancelled). When the runner leaves
  (idle), it leaves the embedded database too, which then stops unless another live process uses it: a killed
  ask's processes are all gone ATLAS_IDLE_SECONDS (+ a few seconds of checks) after it.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forum_atlas import cancellation

START_TIMEOUT_SECONDS = 180   # the imports and the model load take 3–10 s; far more on a machine under load
_SOCKET_PATH_MAX = 107   # sun_path of a Unix socket on Linux, with its NUL
# Variables that differ between two shells (or two tests) of one user without changing what a flow does
_SHELL_ONLY = {"PWD", "OLDPWD", "SHLVL", "_", "TERM", "COLORTERM", "COLUMNS", "LINES", "PS1", "PS2", "SSH_TTY",
               "SSH_CLIENT", "SSH_CONNECTION", "SSH_AUTH_SOCK", "TMUX", "TMUX_PANE", "STY", "WINDOW", "WINDOWID",
               "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM_SESSION_ID", "ITERM_SESSION_ID", "KITTY_WINDOW_ID",
               "GNOME_TERMINAL_SCREEN", "GNOME_TERMINAL_SERVICE", "VTE_VERSION", "PYTEST_CURRENT_TEST"}


class RunnerFailed(RuntimeError):
    """The runner ran the request and it failed: the failure's one-line message, as the command would print it
    had it run the flow itself."""


class RunnerLost(RuntimeError):
    """The runner ended between acknowledging a request and answering it."""


def enabled(target: str) -> bool:
    """Whether a command should use a runner: not when ATLAS_FLOW_RUNNER=off, not in a process that has imported
    Prefect already (a test, the demo: the runner exists to spare a fresh process that import), and not when the
    runner's socket path would not fit a Unix socket address (a very long PREFECT_HOME) on a system without
    /proc/self/fd to shorten it."""
    return os.environ.get("ATLAS_FLOW_RUNNER", "on") != "off" and "prefect" not in sys.modules \
        and (len(str(_Files.of(target).socket).encode()) < _SOCKET_PATH_MAX or os.path.isdir("/proc/self/fd"))


def request(target: str, payload: dict) -> dict:
    """Run `target` ("module:function", taking and returning a JSON object) in this environment's warm runner,
    started if none runs, and return its reply. Raises RunnerFailed with the failure's message."""
    files = _Files.of(target)
    for _ in range(2):   # a second time only when the runner stopped before it took the request
        with files.locked():
            conn = _connect(files.socket) or _start(files, target)
            conn.sendall(json.dumps(payload).encode() + b"\n")
        with conn, conn.makefile("rb") as replies:
            if not replies.readline():
                continue
            answer = replies.readline()
        if not answer:
            raise RunnerLost(f"the flow runner ended before it answered (killed?); see {files.log}")
        reply = json.loads(answer)
        if "error" in reply:
            raise RunnerFailed(reply["error"])
        return reply["result"]
    raise RunnerLost(f"the flow runner stopped twice before it took the request; see {files.log}")


class _Files:
    """A runner's socket, its lock and its log, side by side in the Prefect home."""

    def __init__(self, socket_path: Path):
        self.socket, self.lock, self.log = socket_path, socket_path.with_suffix(".lock"), socket_path.with_suffix(".log")

    @classmethod
    def of(cls, target: str) -> _Files:
        home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser().absolute()
        home.mkdir(parents=True, exist_ok=True)
        environment = sorted((k, v) for k, v in os.environ.items() if k not in _SHELL_ONLY)
        identity = json.dumps([target, sys.executable, os.getcwd(), _code_stamp(), environment])
        return cls(home / f"atlas-runner-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.sock")

    @contextmanager
    def locked(self) -> Iterator[None]:
        with open(self.lock, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


@functools.cache   # one walk per process: `enabled` and `request` both name the runner
def _code_stamp() -> str:
    """The newest modification time of the package's files: a runner never serves older code than its client's."""
    import forum_atlas

    roots = list(forum_atlas.__path__)
    for name in ("store", "flows", "tasks", "blocks", "cli", "runtime", "sql"):   # package-dir in pyproject.toml
        roots += importlib.util.find_spec(f"forum_atlas.{name}").submodule_search_locations or []
    newest = 0
    for root in roots:
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [d for d in subfolders if not d.startswith((".", "__"))]
            newest = max([newest, *(os.stat(os.path.join(folder, n)).st_mtime_ns for n in names
                                    if n.endswith((".py", ".sql")))])
    return str(newest)


@contextmanager
def _address(path: Path) -> Iterator[str]:
    """The socket's address, even when its path is longer than a Unix socket address holds (a deep PREFECT_HOME,
    such as a test's): its folder is then reached through /proc/self/fd, which Linux resolves as the folder itself,
    so the socket file stays in the home, with the home's permissions."""
    if len(str(path).encode()) < _SOCKET_PATH_MAX:
        yield str(path)
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _address(path) as address:
            conn.connect(address)
    except OSError:   # none listens there (a stale socket file, or no file)
        conn.close()
        return None
    return conn


def _start(files: _Files, target: str) -> socket.socket:
    """Start the runner (under the lock) and return a connection once it listens."""
    from forum_atlas.runtime.private_logs import open_private_log

    files.socket.unlink(missing_ok=True)
    # Its own session: the terminal's Ctrl-C stops the command, not the runner other commands share.
    with open_private_log(files.log) as log:
        process = subprocess.Popen([sys.executable, "-m", "forum_atlas.runtime.flow_runner", target, str(files.socket)],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while (conn := _connect(files.socket)) is None:
        exited = process.poll() is not None
        if exited or time.monotonic() > deadline:
            process.kill()
            process.wait()
            failed = RuntimeError("the flow runner " + ("exited while starting" if exited
                                                        else f"did not start within {START_TIMEOUT_SECONDS} s"))
            failed.add_note(files.log.read_bytes()[-2000:].decode("utf-8", "replace"))
            raise failed
        time.sleep(0.05)
    return conn


def _watch_client(conn: socket.socket, gone: threading.Event, answered: threading.Event) -> None:
    """Set `gone` when the client's end of the connection closes before its answer (the command was killed or
    stopped): it sends nothing after its request, so the connection turning readable means it went away."""
    while not answered.is_set():
        if select.select([conn], [], [], 0.2)[0]:
            try:
                still_there = conn.recv(1, socket.MSG_PEEK)
            except OSError:
                still_there = b""
            if not still_there:
                gone.set()
            return


def serve(target: str, path: Path) -> None:
    """The runner's process: import the target (and warm what it declares), listen, answer each request in a
    thread, stop when idle."""
    from forum_atlas.runtime.pgserver import idle_seconds, leave_embedded_servers
    from forum_atlas.runtime.private_logs import redact_this_process

    redact_this_process()
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    getattr(function, "warm_up", lambda: None)()
    redact_this_process()   # the handlers Prefect's import configured
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with _address(path) as address:
        listener.bind(address)
    listener.listen(64)
    identity, files, idle = path.stat().st_ino, _Files(path), idle_seconds()
    state = {"in_flight": 0, "since": time.monotonic()}
    guard = threading.Lock()

    def answer(conn: socket.socket) -> None:
        try:
            with conn, conn.makefile("rb") as incoming:
                payload = json.loads(incoming.readline())
                conn.sendall(b'{"accepted": true}\n')
                started = time.perf_counter()
                client_gone, answered = threading.Event(), threading.Event()
                threading.Thread(target=_watch_client, args=(conn, client_gone, answered), daemon=True).start()
                token = cancellation.cancel_when(client_gone)
                try:
                    reply = {"result": function(payload)}
                except Exception as exc:   # the client prints it as the command would have; the log keeps the trace
                    from forum_atlas.failures import one_line

                    if not client_gone.is_set():
                        traceback.print_exc()
                    reply = {"error": one_line(exc)}
                finally:
                    answered.set()
                    cancellation.release(token)
                outcome = "cancelled (its command went away)" if client_gone.is_set() else \
                    "failed" if "error" in reply else "answered"
                print(f"{time.strftime('%H:%M:%S')} {outcome} in "
                      f"{time.perf_counter() - started:.2f} s", flush=True)   # the log shows where a slow ask spent
                conn.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError):   # the client went away (killed): nothing to answer
            pass
        finally:
            with guard:
                state["in_flight"] -= 1
                state["since"] = time.monotonic()

    while True:
        if select.select([listener], [], [], 1.0)[0]:
            conn, _ = listener.accept()
            with guard:
                state["in_flight"] += 1
            threading.Thread(target=answer, args=(conn,), daemon=True).start()
            continue
        try:
            if path.stat().st_ino != identity:
                break   # another runner took this place (its starter found none answering): leave it the clients
            with guard:
                idle_for = time.monotonic() - state["since"] if state["in_flight"] == 0 else -1.0
            if idle_for >= idle:
                with files.locked():
                    if select.select([listener], [], [], 0)[0]:
                        continue   # a client connected just before the lock: serve it
                    path.unlink(missing_ok=True)
                    break
        except FileNotFoundError:
            break   # the Prefect home was deleted (a temporary one): nothing can reach this runner any more
    listener.close()
    while state["in_flight"]:   # finish what was taken
        time.sleep(0.1)
    leave_embedded_servers()   # its clients' idle period is over: the database need not wait one more


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]))
