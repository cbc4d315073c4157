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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forum_atlas.cli.flow_session import free_port, wait_until_healthy
from forum_atlas.config import Settings
from forum_atlas.scoring import DEGRADED
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
    env = stack_environment(settings, stack)
    try:
        if not settings.database_url:
            stack.pids["database"] = _spawn([sys.executable, "-m", "forum_atlas.cli.ops_stack", "hold-database"],
                                            env, logs / "database.log")
        # the UI asks the server where its API is: without PREFECT_UI_API_URL it answers port 4200, whatever --port
        server_env = {**{k: v for k, v in env.items() if k != "PREFECT_API_URL"}, "PREFECT_UI_API_URL": stack.api_url}
        stack.pids["server"] = _spawn([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                       "--port", str(port)], server_env, logs / "server.log")
        _save(settings, stack)
        wait_until_healthy(stack.api_url, lambda: alive(stack.pids["server"]), 180,
                           f"the Prefect server (log: {logs / 'server.log'})")
        # the worker starts (seconds of imports) while the deployments are made; it creates the pool if first
        stack.pids["worker"] = _spawn([sys.executable, "-m", "prefect", "worker", "start", "--pool", WORK_POOL,
                                       "--type", "process"], env, logs / "worker.log", cwd=root)
        _save(settings, stack)
        if deploy:
            deploy_all(settings, stack)
    except BaseException:
        down(settings)
        raise
    return stack


def stack_environment(settings: Settings, stack: Stack) -> dict[str, str]:
    """The environment of the stack's processes: this one's, pointed at the stack's server and checkout."""
    # PATH: deploy.sh calls `prefect`, which sits beside this interpreter even in a venv that is not activated
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PREFECT_API_URL": stack.api_url, "ATLAS_PROJECT_DIR": stack.project_dir,
            "ATLAS_DATA_DIR": str(settings.data_dir), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}


def deploy_all(settings: Settings, stack: Stack, names: Sequence[str] = ()) -> list[str]:
    """What deployments/deploy.sh does, against the stack's server (its log in the stack's logs)."""
    return deploy(stack.api_url, Path(stack.project_dir), stack_environment(settings, stack), names=names,
                  log=Path(stack.logs) / "deploy.log")


def deploy(api_url: str, root: Path, env: dict[str, str], *, names: Sequence[str] = (),
           log: Path | None = None) -> list[str]:
    """Deploy the flows of `root`/prefect.yaml (those `names`, default all) to the server at `api_url`,
    idempotently: the work pool and the block types are created once, deployments are updated in place,
    every schedule of a deployment already on the server is kept as the operator left it (active or paused,
    added or removed: prefect.yaml's schedules only seed a new deployment), and the nightly-failure alert is
    declared. One process does it all but `prefect deploy` (each Prefect command costs seconds of start-up).
    Returns what it did, one line each."""
    import tempfile

    import yaml
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from forum_atlas.blocks import AtlasDatabase, AtlasProviders
    from forum_atlas.cli.commands.lane import schedule_state

    with temporary_settings(updates={PREFECT_API_URL: api_url}), tempfile.TemporaryDirectory() as scratch:
        _ensure_work_pool()
        for block_type in (AtlasDatabase, AtlasProviders):
            block_type.register_type_and_schema()
        existing = _deployments()
        # Prefect replaces a deployment's schedules with the file's on every deploy (re-pausing a resumed lane,
        # resuming a paused nightly) and leaves them alone when the file gives none: so the file it reads gives
        # none for a deployment the server has
        config = yaml.safe_load((root / "prefect.yaml").read_text())
        for deployment in config["deployments"]:
            if deployment["name"] in {d.name for d in existing.values()}:
                deployment.pop("schedules", None)
        prefect_file = Path(scratch) / "prefect.yaml"
        prefect_file.write_text(yaml.safe_dump(config, sort_keys=False))
        command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--prefect-file", str(prefect_file),
                   *([f"--name={name}" for name in names] or ["--all"])]
        environment = {**env, "PREFECT_API_URL": api_url, "ATLAS_PROJECT_DIR": env.get("ATLAS_PROJECT_DIR", str(root))}
        if log is None:
            done = subprocess.run(command, env=environment, cwd=root, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command[2:])} failed (exit {done.returncode})")
        else:
            _run(command, environment, root, log)
        scheduled = {full: d for full, d in _deployments().items() if d.schedules and (not names or d.name in names)}
        return [*(f"{full}: {schedule_state(d)}" + (" (kept)" if full in existing else "")
                  for full, d in scheduled.items()),
                declare_alerts(os.environ.get("ATLAS_ALERT_WEBHOOK_URL") or None)]


def _deployments() -> dict:
    """flow/deployment → the deployment, for every deployment on the server."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        flows = {flow.id: flow.name for flow in client.read_flows()}
        return {f"{flows[d.flow_id]}/{d.name}": d for d in client.read_deployments()}


def _ensure_work_pool() -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(WORK_POOL)
        except ObjectNotFound:
            try:
                client.create_work_pool(WorkPoolCreate(
                    name=WORK_POOL, type="process", base_job_template=ProcessWorker.get_default_base_job_template()))
            except ObjectAlreadyExists:   # a worker started meanwhile created it
                pass


def down(settings: Settings, *, timeout: float = 30.0) -> list[str]:
    """Stop the stack's processes, newest first; returns the roles that were running."""
    stack = read_stack(settings)
    if stack is None:
        return []
    stopped = []
    for role, pid in reversed(list(stack.pids.items())):
        if not alive(pid):
            continue
        deadline = time.monotonic() + timeout
        while alive(pid) and time.monotonic() < deadline:
            os.killpg(pid, signal.SIGTERM)   # again every 2 s: a Prefect worker ignores the first one
            _wait_for_exit(pid, min(2.0, max(deadline - time.monotonic(), 0)))
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
        stopped.append(role)
    state_file(settings).unlink(missing_ok=True)
    return stopped


def _wait_for_exit(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


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


ALERT_BLOCK = "atlas-nightly-alert"
ALERT_AUTOMATION = "forum-atlas: nightly scoring failed"
# the events of a nightly run that alert: it failed, or ended Degraded (its fetch failed; due forecasts wait)
ALERT_EVENTS = frozenset(f"prefect.flow-run.{state}" for state in ("Failed", "Crashed", "TimedOut", DEGRADED))
NIGHTLY = "score-accuracy/score-accuracy"


def declare_alerts(webhook_url: str | None = None) -> str:
    """The automation that notifies when the nightly score fails (Failed, Crashed or TimedOut) or ends Degraded
    (its fetch failed: due forecasts wait for data), through the
    webhook notification block `atlas-nightly-alert` (created from `webhook_url` when given, else one an
    operator saved; its URL is editable in the UI). Idempotent: a redeploy updates it in place. Returns
    what it did, in one line."""
    from prefect.automations import Automation, EventTrigger, SendNotification
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.client.orchestration import get_client

    if webhook_url:
        # {"text": …} is what Slack/Mattermost incoming webhooks read; a generic receiver gets the same JSON
        block = CustomWebhookNotificationBlock(name=ALERT_BLOCK, url=webhook_url,
                                               json_data={"text": "{{subject}}: {{body}}"})
        block.save(ALERT_BLOCK, overwrite=True)
    else:
        try:
            block = CustomWebhookNotificationBlock.load(ALERT_BLOCK)
        except ValueError:
            return (f"no nightly-failure alert: set ATLAS_ALERT_WEBHOOK_URL (or save a Custom Webhook block "
                    f"named {ALERT_BLOCK}) and deploy again")
    with get_client(sync_client=True) as client:
        nightly = client.read_deployment_by_name(NIGHTLY)
    trigger = EventTrigger(
        expect=set(ALERT_EVENTS),
        match_related={"prefect.resource.id": f"prefect.deployment.{nightly.id}"},
        posture="Reactive", threshold=1, within=0)
    action = SendNotification(
        block_document_id=block._block_document_id, subject="Forum Atlas: the nightly score failed or degraded",
        body="Flow run {{ flow_run.name }} ({{ flow_run.id }}) of score-accuracy ended "
             "{{ flow_run.state.name }}: {{ flow_run.state.message }}")
    try:
        automation = Automation.read(name=ALERT_AUTOMATION)
    except ValueError:
        Automation(name=ALERT_AUTOMATION, description="notify when the nightly score-accuracy run fails",
                   trigger=trigger, actions=[action]).create()
        return f"alert declared: {ALERT_AUTOMATION} → block {ALERT_BLOCK}"
    automation.trigger, automation.actions, automation.enabled = trigger, [action], True
    automation.update()
    return f"alert updated: {ALERT_AUTOMATION} → block {ALERT_BLOCK}"


def hold_database() -> None:
    """Keep the embedded PostgreSQL of ATLAS_DATA_DIR running until SIGTERM (then leave it cleanly)."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.store.db import Database
    from forum_atlas.store.pgserver import stop_embedded

    settings = settings_from_env()
    Database.open(settings).close()   # starts the server and applies any pending migrations

    def leave(*_: object) -> None:
        # `down` repeats SIGTERM to this process group every 2 s: a second one must not cut the stop short, nor kill
        # the pg_ctl it runs (a child inherits the ignored signal), or PostgreSQL outlives the stack
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop_embedded(settings.pgdata)
        sys.exit(0)

    signal.signal(signal.SIGTERM, leave)
    print(f"holding the embedded PostgreSQL in {settings.pgdata}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__" and sys.argv[1:] == ["hold-database"]:
    hold_database()
