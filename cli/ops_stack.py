"""`atlas ops up|down|status`: a Prefect server on loopback, the `atlas-process` work pool, a worker and
the deployments, as background processes that outlive the command, plus (on embedded defaults) a
process that holds the embedded PostgreSQL open for the worker's lifetime.

Without that holder every flow run the worker starts opens the embedded database itself, and the
last one to leave stops it, so the next run pays its start-up again. The stack's processes, URLs
and log files are recorded in `<data dir>/ops/stack.json`; `down` stops them in reverse order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forum_atlas.cli.flow_session import free_port, wait_until_healthy
from forum_atlas.config import Settings
from forum_atlas.store.pgserver import pid_alive

WORK_POOL = "atlas-process"


@dataclass
class Stack:
    api_url: str
    project_dir: str
    logs: str
    pids: dict[str, int] = field(default_factory=dict)   # role → pid, in start order

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/api")


def state_file(settings: Settings) -> Path:
    return settings.data_dir / "ops" / "stack.json"


def read_stack(settings: Settings) -> Stack | None:
    path = state_file(settings)
    return Stack(**json.loads(path.read_text())) if path.exists() else None


def alive(pid: int) -> bool:
    """Running, and not a zombie (exited, not yet reaped by the process that started it)."""
    try:
        return pid_alive(pid) and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def project_dir() -> Path:
    """The checkout that holds prefect.yaml (deployments run flows from their source files)."""
    import forum_atlas

    root = Path(forum_atlas.__file__).resolve().parent.parent
    if not (root / "prefect.yaml").exists():
        raise RuntimeError("atlas ops needs a checkout of the project (prefect.yaml and flows/ beside the package); "
                           f"{root} has none: install with `pip install -e .` from the checkout")
    return root


def up(settings: Settings, *, port: int | None = None, deploy: bool = True) -> Stack:
    existing = read_stack(settings)
    if existing and all(alive(pid) for pid in existing.pids.values()):
        return existing
    if existing:
        down(settings)   # a partly dead stack: clear it before starting anew
    root = project_dir()
    logs = state_file(settings).parent
    logs.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    stack = Stack(api_url=f"http://127.0.0.1:{port}/api", project_dir=str(root), logs=str(logs))
    # PATH: deploy.sh calls `prefect`, which sits beside this interpreter even in a venv that is not activated
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PREFECT_API_URL": stack.api_url, "ATLAS_PROJECT_DIR": str(root),
           "ATLAS_DATA_DIR": str(settings.data_dir), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    try:
        if not settings.database_url:
            stack.pids["database"] = _spawn([sys.executable, "-m", "forum_atlas.cli.ops_stack", "hold-database"],
                                            env, logs / "database.log")
        stack.pids["server"] = _spawn([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                       "--port", str(port)], {k: v for k, v in env.items() if k != "PREFECT_API_URL"},
                                      logs / "server.log")
        _save(settings, stack)
        wait_until_healthy(stack.api_url, lambda: alive(stack.pids["server"]), 180,
                           f"the Prefect server (log: {logs / 'server.log'})")
        if deploy:
            _run(["bash", str(root / "deployments" / "deploy.sh")], env, root, logs / "deploy.log")
        stack.pids["worker"] = _spawn([sys.executable, "-m", "prefect", "worker", "start", "--pool", WORK_POOL],
                                      env, logs / "worker.log", cwd=root)
        _save(settings, stack)
    except BaseException:
        down(settings)
        raise
    return stack


def down(settings: Settings, *, timeout: float = 30.0) -> list[str]:
    """Stop the stack's processes, newest first; returns the roles that were running."""
    stack = read_stack(settings)
    if stack is None:
        return []
    stopped = []
    for role, pid in reversed(list(stack.pids.items())):
        if not alive(pid):
            continue
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
        stopped.append(role)
    state_file(settings).unlink(missing_ok=True)
    return stopped


def _spawn(command: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> int:
    """A background process in a session of its own (it outlives this command; `down` stops its group)."""
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True).pid


def _run(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
    with log.open("ab") as out:
        done = subprocess.run(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed (exit {done.returncode}); see {log}")


def _save(settings: Settings, stack: Stack) -> None:
    state_file(settings).write_text(json.dumps(asdict(stack), indent=2))


def hold_database() -> None:
    """Keep the embedded PostgreSQL of ATLAS_DATA_DIR running until SIGTERM (then leave it cleanly)."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.store.db import Database
    from forum_atlas.store.pgserver import stop_embedded

    settings = settings_from_env()
    Database.open(settings).close()   # starts the server and applies any pending migrations
    signal.signal(signal.SIGTERM, lambda *_: (stop_embedded(settings.pgdata), sys.exit(0)))
    print(f"holding the embedded PostgreSQL in {settings.pgdata}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__" and sys.argv[1:] == ["hold-database"]:
    hold_database()
