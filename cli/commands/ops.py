"""`atlas ops up|down|status`: the operator's stack (Prefect server, work pool, worker, deployments) in one command."""

from __future__ import annotations

import argparse
import os

from forum_atlas.cli.output import table


def register(groups: argparse._SubParsersAction) -> None:
    ops = groups.add_parser("ops", help="start/stop a local Prefect server, work pool, worker and the deployments")
    sub = ops.add_subparsers(dest="ops_command", required=True)
    up = sub.add_parser("up", help="start the stack in the background (idempotent: restarts only a dead worker, "
                                   "redeploys if prefect.yaml or flows/ changed); prints what deploy did, its URLs "
                                   "and logs")
    up.add_argument("--port", type=int, help="the Prefect server's port on 127.0.0.1 (default: a free one)")
    up.add_argument("--no-deploy", action="store_true", help="do not (re)deploy prefect.yaml")
    up.set_defaults(handler=_up)
    sub.add_parser("down", help="stop the stack's processes").set_defaults(handler=_down)
    sub.add_parser("status", help="the stack's processes and URLs").set_defaults(handler=_status)
    deploy = sub.add_parser("deploy", help="deploy prefect.yaml to the server at PREFECT_API_URL, keeping every "
                                           "schedule as it is (what deployments/deploy.sh runs)")
    deploy.add_argument("--prefect-file", help="another deployment file, e.g. deployments/prefect.docker.yaml")
    deploy.set_defaults(handler=_deploy)
    alerts = sub.add_parser("alerts", help="declare the automation that notifies when a deployment's run fails or "
                                           "crashes (deploy.sh runs it; needs PREFECT_API_URL)")
    alerts.add_argument("--webhook-url", default=os.environ.get("ATLAS_ALERT_WEBHOOK_URL"),
                        help="where to POST the alert (default $ATLAS_ALERT_WEBHOOK_URL; empty = a saved "
                             "atlas-nightly-alert block)")
    alerts.set_defaults(handler=_alerts)


def _settings():
    from forum_atlas.config import settings_from_env

    return settings_from_env()


def _up(args: argparse.Namespace) -> int:
    from forum_atlas.runtime import ops_stack
    from forum_atlas.store.db import Database

    settings = _settings()
    stack, done = ops_stack.up(settings, port=args.port, deploy=not args.no_deploy)
    if not settings.database_url:
        # the stack's holder keeps the embedded PostgreSQL up: pending migrations are applied now, not by a first run
        Database.open(settings).close()
    for line in done:
        print(line)
    _print(stack)
    print(f"\nexport PREFECT_API_URL={stack.api_url}   # to run deployments from this shell; `atlas ops down` stops it")
    return 0


def _down(args: argparse.Namespace) -> int:
    from forum_atlas.runtime import ops_stack

    stopped = ops_stack.down(_settings())
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    from forum_atlas.runtime import stack_state

    stack = stack_state.read_stack(_settings())
    if stack is None:
        print("not running (atlas ops up starts it)")
        return 1
    _print(stack)
    return 0 if all(stack_state.alive(pid) for pid in stack.pids.values()) else 1


def _deploy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from forum_atlas.runtime import ops_stack

    api_url = _require_api_url()
    root = Path(os.environ.get("ATLAS_PROJECT_DIR") or ops_stack.project_dir())
    prefect_file = Path(args.prefect_file).resolve() if args.prefect_file else None
    for line in ops_stack.deploy(api_url, root, dict(os.environ), prefect_file=prefect_file):
        print(line)
    return 0


def _require_api_url() -> str:
    if not os.environ.get("PREFECT_API_URL"):
        raise RuntimeError("set PREFECT_API_URL to your Prefect server, e.g. http://127.0.0.1:4200/api "
                           "(`atlas ops up` starts one)")
    return os.environ["PREFECT_API_URL"]


def _alerts(args: argparse.Namespace) -> int:
    from forum_atlas.runtime import ops_stack

    _require_api_url()
    print(ops_stack.declare_alerts(args.webhook_url or None))
    return 0


def _print(stack) -> None:
    from forum_atlas.runtime.stack_state import alive

    print(f"Prefect UI  {stack.ui_url}\nAPI         {stack.api_url}\nlogs        {stack.logs}")
    print(table(["process", "pid", "state"], [(role, pid, "running" if alive(pid) else "stopped")
                                              for role, pid in stack.pids.items()]))
