"""`atlas ops up|down|status`: a Prefect server on loopback with its own PostgreSQL (`prefect_postgres`), the
`atlas-process` work pool, a worker and the deployments, as background processes that outlive the command,
plus (on embedded defaults) a process that holds the embedded PostgreSQL open for the worker's lifetime, and a
janitor that closes the task runs a crashed flow run left Running.

Without that holder every flow run the worker starts opens the embedded database itself, and the
last one to leave stops it, so the next run pays its start-up again. The stack's processes, URLs
and log files are recorded in `<data dir>/ops/stack.json`; `down` stops them in reverse order.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from forum_atlas.config import Settings
from forum_atlas.runtime import prefect_postgres
from forum_atlas.runtime.prefect_api import QUIET_CONSOLE, free_port, home_lock, prefect_home, wait_until_healthy
from forum_atlas.runtime.schedules import seed_schedules
from forum_atlas.runtime.stack_state import Stack, alive, read_stack, save_stack, state_file
from forum_atlas.scoring import DEGRADED

WORK_POOL = "atlas-process"


def schedule_state(deployment) -> str:
    """active (a schedule of it is), paused, or absent (no such deployment)."""
    if deployment is None:
        return "absent"
    return "active" if any(s.active for s in deployment.schedules) else "paused"


def project_dir() -> Path:
    """The checkout that holds prefect.yaml (deployments run flows from their source files)."""
    import forum_atlas

    root = Path(forum_atlas.__file__).resolve().parent.parent
    if not (root / "prefect.yaml").exists():
        raise RuntimeError("atlas ops needs a checkout of the project (prefect.yaml and flows/ beside the package); "
                           f"{root} has none: install with `pip install -e .` from the checkout")
    return root


def up(settings: Settings, *, port: int | None = None, deploy: bool = True) -> tuple[Stack, list[str]]:
    """Start the stack, or what of it died: with the server (and its database) still up, a dead worker (or
    database holder) is started again beside it, the server's URL unchanged, and the deployments are redeployed
    when prefect.yaml or flows/ changed since the last deploy; otherwise the whole stack starts again, on the
    port it had unless `port` says otherwise. Returns the stack and what was done, one line each (deploy's own
    lines: schedules kept, alerts declared or not)."""
    existing = read_stack(settings)
    if existing and all(alive(existing.pids[role]) for role in ("server", *_SERVER_NEEDS) if role in existing.pids):
        done = _restart_dead(settings, existing)
        return existing, done + (_redeploy_if_changed(settings, existing) if deploy else
                                 ["not redeployed (--no-deploy)"])
    if existing:
        down(settings)   # the server died: clear what is left before starting anew, where it was
        port = port or int(existing.api_url.rsplit(":", 1)[1].split("/", 1)[0])
    root = project_dir()
    logs = state_file(settings).parent
    logs.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    prefect_database = prefect_postgres.choice(dict(os.environ))
    stack = Stack(api_url=f"http://127.0.0.1:{port}/api", project_dir=str(root), logs=str(logs),
                  prefect_database="postgresql" if prefect_database.startswith("postgresql") else prefect_database)
    env = stack_environment(settings, stack)
    done: list[str] = []
    try:
        server_env = {**{k: v for k, v in env.items() if k != "PREFECT_API_URL"},
                      # the UI asks the server where its API is: without this it answers port 4200, whatever --port
                      "PREFECT_UI_API_URL": stack.api_url,
                      # the links in alerts (the `ui_url` filter of automations' templates)
                      "PREFECT_UI_URL": stack.ui_url}
        if prefect_database == "managed":
            server_env[_DATABASE_URL] = _start_prefect_postgres(settings, stack, env)
        elif prefect_database != prefect_postgres.SQLITE:
            server_env[_DATABASE_URL] = prefect_database
        if not settings.database_url:
            _start_role(stack, "database", env)
        with home_lock(prefect_home()):   # no shared API of the CLI sets up the same new database meanwhile
            stack.pids["server"] = _spawn([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                           "--port", str(port)], server_env, logs / "server.log")
            save_stack(settings, stack)
            wait_until_healthy(stack.api_url, lambda: alive(stack.pids["server"]), 180,
                               f"the Prefect server (log: {logs / 'server.log'})")
        # the worker starts (seconds of imports) while the deployments are made; it creates the pool if first
        _start_role(stack, "worker", env)
        _start_role(stack, "janitor", env)
        save_stack(settings, stack)
        if deploy:
            done = deploy_all(settings, stack)
            stack.deployed = deployment_digest(root)
            save_stack(settings, stack)
    except BaseException:
        down(settings)
        raise
    return stack, done


_DATABASE_URL = "PREFECT_SERVER_DATABASE_CONNECTION_URL"
_SERVER_NEEDS = (prefect_postgres.ROLE,)   # roles the server cannot run without: one dead = the stack starts anew


def _start_prefect_postgres(settings: Settings, stack: Stack, env: dict[str, str]) -> str:
    """Start the stack's own PostgreSQL for Prefect (created on first use); its connection URL once it serves."""
    pgdata = settings.data_dir / "ops" / "prefect-pg"
    prefect_postgres.prepare(pgdata)
    command, user = prefect_postgres.server_command(pgdata)
    log = Path(stack.logs) / f"{prefect_postgres.ROLE}.log"
    stack.pids[prefect_postgres.ROLE] = _spawn(command, env, log, user=user)
    save_stack(settings, stack)
    prefect_postgres.wait_ready(pgdata, lambda: alive(stack.pids[prefect_postgres.ROLE]), 60, log)
    return prefect_postgres.connection_url(pgdata)


def deployment_digest(root: Path) -> str:
    """What a deploy depends on: prefect.yaml and the flows' source (their parameters make the run forms)."""
    import hashlib

    digest = hashlib.sha256()
    for path in [root / "prefect.yaml", *sorted((root / "flows").glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _redeploy_if_changed(settings: Settings, stack: Stack) -> list[str]:
    """`up` on a running stack: redeploy (schedules kept) when prefect.yaml or flows/ changed since the last deploy."""
    digest = deployment_digest(Path(stack.project_dir))
    if digest == stack.deployed:
        return ["deployments unchanged since the last deploy (prefect.yaml, flows/): not redeployed"]
    done = deploy_all(settings, stack)
    stack.deployed = digest
    save_stack(settings, stack)
    return ["redeployed: prefect.yaml or flows/ changed since the last deploy", *done]


def _start_role(stack: Stack, role: str, env: dict[str, str]) -> None:
    """Start the stack's database holder, worker or janitor (their logs append to <role>.log)."""
    command = {"database": ["-m", "forum_atlas.runtime.ops_stack", "hold-database"],
               "worker": ["-m", "prefect", "worker", "start", "--pool", WORK_POOL, "--type", "process"],
               "janitor": ["-m", "forum_atlas.runtime.ops_stack", "close-crashed-task-runs"]}[role]
    stack.pids[role] = _spawn([sys.executable, *command], env, Path(stack.logs) / f"{role}.log",
                              cwd=Path(stack.project_dir) if role == "worker" else None)


def _restart_dead(settings: Settings, stack: Stack) -> list[str]:
    """Start again the roles of a stack whose server is up that died (a killed worker): the database holder
    before the worker, as `up` orders them."""
    env = stack_environment(settings, stack)
    restarted = []
    for role in ("database", "worker", "janitor"):
        if role in stack.pids and not alive(stack.pids[role]):
            _start_role(stack, role, env)
            restarted.append(f"restarted: {role} (pid {stack.pids[role]}); the server stays at {stack.api_url}")
    save_stack(settings, stack)
    return restarted


def stack_environment(settings: Settings, stack: Stack) -> dict[str, str]:
    """The environment of the stack's processes: this one's, pointed at the stack's server and checkout."""
    # PATH: deploy.sh calls `prefect`, which sits beside this interpreter even in a venv that is not activated.
    # Their output goes to log files: Prefect's console handler keeps its default level there, whatever quiet
    # level this command's terminal has (the runs log to the API at PREFECT_LOGGING_LEVEL, INFO by default).
    inherited = {k: v for k, v in os.environ.items() if k != QUIET_CONSOLE}
    return {**inherited, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PREFECT_API_URL": stack.api_url, "ATLAS_PROJECT_DIR": stack.project_dir,
            "ATLAS_DATA_DIR": str(settings.data_dir), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}


def deploy_all(settings: Settings, stack: Stack, names: Sequence[str] = ()) -> list[str]:
    """What deployments/deploy.sh does, against the stack's server (its log in the stack's logs)."""
    return deploy(stack.api_url, Path(stack.project_dir), stack_environment(settings, stack), names=names,
                  log=Path(stack.logs) / "deploy.log")


def deploy(api_url: str, root: Path, env: dict[str, str], *, names: Sequence[str] = (),
           log: Path | None = None, prefect_file: Path | None = None) -> list[str]:
    """Deploy the flows of `root`/prefect.yaml (or `prefect_file`: deployments/prefect.docker.yaml; those `names`,
    default all) to the server at `api_url`,
    idempotently: the work pool and the block types are created once, deployments are updated in place,
    every schedule of a deployment already on the server is kept as the operator left it (active or paused,
    added or removed: prefect.yaml's `initial_schedules` only seed a new deployment), every run beats (the
    heartbeat is in prefect.yaml's job environment), and the failure alert is declared, and so is the
    automation that marks a run Crashed when its heartbeats stop. One process does it
    all but `prefect deploy` (each Prefect command costs seconds of start-up).
    Returns what it did, one line each."""
    import tempfile

    import yaml
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from forum_atlas.blocks import AtlasDatabase, AtlasProviders

    with temporary_settings(updates={PREFECT_API_URL: api_url}), tempfile.TemporaryDirectory() as scratch:
        _ensure_work_pool()
        for block_type in (AtlasDatabase, AtlasProviders):
            block_type.register_type_and_schema()
        existing = _deployments()
        # Prefect replaces a deployment's schedules with the file's on every deploy (re-pausing a resumed lane,
        # resuming a paused nightly) and leaves them alone when the file says `schedules: null`, as prefect.yaml
        # does for every deployment: its `initial_schedules` (a key Prefect ignores) seed a new one only
        config = yaml.safe_load((prefect_file or root / "prefect.yaml").read_text())
        seed_schedules(config, {d.name for d in existing.values()}, root / "prefect.yaml")
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
                declare_alerts(os.environ.get("ATLAS_ALERT_WEBHOOK_URL") or None),
                declare_crash_detection(crash_after_seconds(env))]


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
            if role == prefect_postgres.ROLE:
                os.kill(pid, signal.SIGINT)   # the postmaster's fast shutdown: it stops its own backends
            else:
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


def _spawn(command: list[str], env: dict[str, str], log: Path, cwd: Path | None = None,
           user: str | None = None) -> int:
    """A background process in a session of its own (it outlives this command; `down` stops its group)."""
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, user=user, group=_group_of(user)).pid


def _group_of(user: str | None) -> int | None:
    import pwd

    return pwd.getpwnam(user).pw_gid if user else None


def _run(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
    with log.open("ab") as out:
        done = subprocess.run(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed (exit {done.returncode}); see {log}")


ALERT_BLOCK = "atlas-nightly-alert"   # its first use named it; every deployment's failures now go through it
ALERT_AUTOMATION = "forum-atlas: a deployment run failed"
_FORMER_ALERT_AUTOMATIONS = ("forum-atlas: nightly scoring failed",)   # nightly-only: replaced, removed on deploy
# the events of a deployment's run that alert: it failed, crashed (its process died, or its heartbeats stopped) or
# timed out, or (the nightly) ended Degraded: its fetch failed, due forecasts wait
ALERT_EVENTS = frozenset(f"prefect.flow-run.{state}" for state in ("Failed", "Crashed", "TimedOut", DEGRADED))


def declare_alerts(webhook_url: str | None = None) -> str:
    """The automation that notifies when a run of any deployment (ingest, deliberate, backfill, the nightly…)
    fails, crashes or times out, or the nightly ends Degraded, with the run's link and its state's message (the
    one-line cause), through the webhook notification block `atlas-nightly-alert` (created from `webhook_url`
    when given, else one an operator saved; its URL is editable in the UI). A server automation, not flow hooks:
    a run whose process was killed runs no hook of its own, but its Crashed state (set by the crash detection)
    alerts all the same. Runs started outside a deployment (the CLI's) report to their terminal instead.
    Idempotent: a redeploy updates it in place. Returns what it did, in one line."""
    from prefect.automations import Automation, EventTrigger, SendNotification
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    if webhook_url:
        # {"text": …} is what Slack/Mattermost incoming webhooks read; a generic receiver gets the same JSON
        block = CustomWebhookNotificationBlock(name=ALERT_BLOCK, url=webhook_url,
                                               json_data={"text": "{{subject}}: {{body}}"})
        block.save(ALERT_BLOCK, overwrite=True)
    else:
        try:
            block = CustomWebhookNotificationBlock.load(ALERT_BLOCK)
        except ValueError:
            return (f"no failure alert: set ATLAS_ALERT_WEBHOOK_URL (or save a Custom Webhook block "
                    f"named {ALERT_BLOCK}) and deploy again")
    for former in _FORMER_ALERT_AUTOMATIONS:
        try:
            Automation.read(name=former).delete()
        except ValueError:
            pass
    trigger = EventTrigger(expect=set(ALERT_EVENTS), match={"prefect.resource.id": "prefect.flow-run.*"},
                           match_related={"prefect.resource.role": "deployment"},   # not a subflow, not the CLI's
                           posture="Reactive", threshold=1, within=0)
    action = SendNotification(
        block_document_id=block._block_document_id,
        subject="Forum Atlas: {{ flow.name }} run {{ flow_run.name }} {{ flow_run.state.name }}",
        body="{{ flow.name }} run {{ flow_run.name }} ({{ flow_run.id }}) ended {{ flow_run.state.name }}: "
             "{{ flow_run.state.message | truncate(300) }} {{ flow_run|ui_url }}")
    done = _declare_automation(ALERT_AUTOMATION, "notify when a deployment's run fails, crashes or degrades",
                               trigger, action)
    return f"alert {done}: {ALERT_AUTOMATION} → block {ALERT_BLOCK}"


def _declare_automation(name: str, description: str, trigger, action) -> str:
    """Create the automation `name`, or update it in place (enabled again); returns "declared" or "updated"."""
    from prefect.automations import Automation

    try:
        automation = Automation.read(name=name)
    except ValueError:
        Automation(name=name, description=description, trigger=trigger, actions=[action]).create()
        return "declared"
    automation.trigger, automation.actions, automation.enabled = trigger, [action], True
    automation.update()
    return "updated"


HEARTBEAT_SECONDS = 30   # Prefect's shortest flow-run heartbeat interval
CRASH_AUTOMATION = "forum-atlas: crash runs whose heartbeats stopped"
DEFAULT_CRASH_AFTER_SECONDS = 90   # three heartbeats missed: a loaded machine delays one, not three
# what ends a run's heartbeats normally: its final states (Degraded: the nightly's completed-with-a-failed-fetch)
FINAL_EVENTS = frozenset(f"prefect.flow-run.{state}" for state in
                         ("Completed", "Failed", "Crashed", "Cancelled", "TimedOut", DEGRADED))


def crash_after_seconds(env: dict[str, str]) -> int:
    """How long a deployment run's silence lasts before it is marked Crashed: ATLAS_CRASH_AFTER_SECONDS."""
    seconds = int(env.get("ATLAS_CRASH_AFTER_SECONDS") or DEFAULT_CRASH_AFTER_SECONDS)
    if seconds <= HEARTBEAT_SECONDS:
        raise ValueError(f"ATLAS_CRASH_AFTER_SECONDS must exceed the heartbeat interval ({HEARTBEAT_SECONDS} s): "
                         f"{seconds}")
    return seconds


def declare_crash_detection(after_seconds: int) -> str:
    """Prefect's answer to "zombie" runs (its guide "Detect zombie flows"), as a server automation: a flow run
    whose heartbeat (every HEARTBEAT_SECONDS, set on every deployment) is followed by neither another one nor a
    final state within `after_seconds` is set Crashed: its process died (a killed worker, a lost machine). The
    UI then offers Retry, and a retried ingest resumes after its committed batches. The change is not forced,
    so a run that did end is never rewritten. Idempotent; returns what it did, in one line."""
    from datetime import timedelta

    from prefect.automations import EventTrigger
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import Posture
    from prefect.events.schemas.events import ResourceSpecification

    heartbeat = "prefect.flow-run.heartbeat"
    trigger = EventTrigger(after={heartbeat}, expect={heartbeat, *FINAL_EVENTS},
                           match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
                           for_each={"prefect.resource.id"}, posture=Posture.Proactive, threshold=1,
                           within=timedelta(seconds=after_seconds))
    action = ChangeFlowRunState(state=StateType.CRASHED,
                                message=f"no heartbeat for {after_seconds} s: the run's process is gone "
                                        "(Retry runs it again; an ingest resumes after its committed batches)")
    done = _declare_automation(CRASH_AUTOMATION, "mark flow runs Crashed when their heartbeats stop", trigger, action)
    return (f"crash detection {done}: {CRASH_AUTOMATION}: a run silent for {after_seconds} s "
            f"(heartbeat every {HEARTBEAT_SECONDS} s) is Crashed")


def hold_database() -> None:
    """Keep the embedded PostgreSQL of ATLAS_DATA_DIR running until SIGTERM (then leave it cleanly)."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.runtime.pgserver import embedded_url, stop_embedded

    settings = settings_from_env()
    embedded_url(settings.pgdata)   # starts the server or joins it (`atlas ops up` applies pending migrations)

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


JANITOR_SECONDS = 10   # how often the janitor looks for task runs of crashed flow runs


def close_crashed_task_runs() -> int:
    """Set Crashed the task runs still Pending or Running in a flow run that crashed: its process is gone (killed,
    its machine lost; the worker or the crash detection set the flow run Crashed), so they never end on their own,
    and the dashboard would count them Running for ever. Returns how many it closed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    with get_client(sync_client=True) as client:
        stranded = client.read_task_runs(
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CRASHED]))),
            task_run_filter=TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
                any_=[StateType.RUNNING, StateType.PENDING]))))
        for task_run in stranded:
            client.set_task_run_state(task_run.id, Crashed(message="its flow run crashed (its process is gone)"),
                                      force=True)
    return len(stranded)


def janitor() -> None:
    """The stack's janitor: close_crashed_task_runs every JANITOR_SECONDS until SIGTERM; one line per pass that
    closed something, one line per failed pass (the server restarting), never a traceback."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        try:
            if closed := close_crashed_task_runs():
                print(f"closed {closed} task run(s) of crashed flow runs as Crashed", flush=True)
        except Exception as exc:  # noqa: BLE001 — a pass that failed is tried again at the next one
            print(f"pass failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", flush=True)
        time.sleep(JANITOR_SECONDS)


if __name__ == "__main__" and sys.argv[1:] == ["hold-database"]:
    hold_database()
if __name__ == "__main__" and sys.argv[1:] == ["close-crashed-task-runs"]:
    janitor()
