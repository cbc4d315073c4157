"""`atlas ops up|down|status`: the operator's stack (Prefect server, work pool, worker, deployments) in one command."""

from __future__ import annotations

import argparse

from forum_atlas.cli.output import table


def register(groups: argparse._SubParsersAction) -> None:
    ops = groups.add_parser("ops", help="start/stop a local Prefect server, work pool, worker and the deployments")
    sub = ops.add_subparsers(dest="ops_command", required=True)
    up = sub.add_parser("up", help="start the stack in the background (idempotent); prints its URLs and logs")
    up.add_argument("--port", type=int, help="the Prefect server's port on 127.0.0.1 (default: a free one)")
    up.add_argument("--no-deploy", action="store_true", help="do not (re)deploy prefect.yaml")
    up.set_defaults(handler=_up)
    sub.add_parser("down", help="stop the stack's processes").set_defaults(handler=_down)
    sub.add_parser("status", help="the stack's processes and URLs").set_defaults(handler=_status)


def _settings():
    from forum_atlas.config import settings_from_env

    return settings_from_env()


def _up(args: argparse.Namespace) -> int:
    from forum_atlas.cli import ops_stack

    stack = ops_stack.up(_settings(), port=args.port, deploy=not args.no_deploy)
    _print(stack)
    print(f"\nexport PREFECT_API_URL={stack.api_url}   # to run deployments from this shell; `atlas ops down` stops it")
    return 0


def _down(args: argparse.Namespace) -> int:
    from forum_atlas.cli import ops_stack

    stopped = ops_stack.down(_settings())
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def _status(args: argparse.Namespace) -> int:
    from forum_atlas.cli import ops_stack

    stack = ops_stack.read_stack(_settings())
    if stack is None:
        print("not running (atlas ops up starts it)")
        return 1
    _print(stack)
    return 0 if all(ops_stack.alive(pid) for pid in stack.pids.values()) else 1


def _print(stack) -> None:
    from forum_atlas.cli.ops_stack import alive

    print(f"Prefect UI  {stack.ui_url}\nAPI         {stack.api_url}\nlogs        {stack.logs}")
    print(table(["process", "pid", "state"], [(role, pid, "running" if alive(pid) else "stopped")
                                              for role, pid in stack.pids.items()]))
