"""`atlas lane run|status|pause|resume`: the forecast-binding lane, the one command for it.

`run` runs the lane's flow once, here (no server needed); `status`, `pause` and `resume` act on its schedule on
the Prefect server at PREFECT_API_URL. The lane ships paused (FC-5). `resume` is the documented way to start it;
`deployments/deploy.sh` leaves the schedules of a deployment the server already has as they are, so a redeploy
never re-pauses a lane that an operator resumed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from forum_atlas.cli.output import instant, table
from forum_atlas.runtime.ops_stack import schedule_state

LANE = "bind-forecasts/bind-forecasts"


def register(groups: argparse._SubParsersAction) -> None:
    lane = groups.add_parser("lane", help="the forecast-binding lane: run it once, or its schedule (ships paused) "
                                          "on a Prefect server")
    sub = lane.add_subparsers(dest="lane_command", required=True)
    run = sub.add_parser("run", help="run the binding lane once (the scheduled deployment ships paused)")
    run.add_argument("--questions", type=Path, help="question file (default data/forecast_lane.json)")
    run.add_argument("--as-of", type=instant, help="issue time (default now)")
    run.set_defaults(handler=_run)
    status = sub.add_parser("status", help="active or paused, with its schedules")
    status.add_argument("--state", action="store_true", help="print only the state: active, paused or absent")
    status.set_defaults(handler=_status)
    sub.add_parser("resume", help="activate the lane's schedules").set_defaults(handler=lambda a: _set(True))
    sub.add_parser("pause", help="deactivate the lane's schedules").set_defaults(handler=lambda a: _set(False))


def _run(args: argparse.Namespace) -> int:
    from forum_atlas.flows.bind_forecasts import LaneParameters, bind_forecasts

    results = bind_forecasts(LaneParameters(question_file=str(args.questions) if args.questions else None,
                                            as_of=args.as_of))
    print(table(["key", "status", "forecast", "probability", "deadline"],
                [(r["key"], r["status"], r.get("forecast_id"), r.get("probability"), r.get("deadline"))
                 for r in results]))
    return 0


def _require_server() -> None:
    if not os.environ.get("PREFECT_API_URL"):
        raise RuntimeError("set PREFECT_API_URL to the Prefect server the lane is deployed on "
                           "(`atlas ops up` prints it)")


async def _read():
    from prefect import get_client
    from prefect.exceptions import ObjectNotFound

    async with get_client() as client:
        try:
            return await client.read_deployment_by_name(LANE)
        except ObjectNotFound:
            return None


def _status(args: argparse.Namespace) -> int:
    _require_server()
    deployment = asyncio.run(_read())
    if args.state:
        print(schedule_state(deployment))
    else:
        schedules = [{"cron": s.schedule.cron, "timezone": s.schedule.timezone, "active": s.active}
                     for s in (deployment.schedules if deployment else [])]
        print(json.dumps({"deployment": LANE, "state": schedule_state(deployment), "schedules": schedules}, indent=2))
    return 0


def set_lane(active: bool) -> str:
    """Activate or deactivate every schedule of the lane; returns its state after."""
    async def apply() -> str:
        from prefect import get_client
        from prefect.settings import PREFECT_API_URL

        deployment = await _read()
        if deployment is None:
            raise RuntimeError(f"{LANE} is not deployed on {PREFECT_API_URL.value()}: run deployments/deploy.sh")
        async with get_client() as client:
            for schedule in deployment.schedules:
                await client.update_deployment_schedule(deployment.id, schedule.id, active=active)
        return schedule_state(await _read())

    return asyncio.run(apply())


def _set(active: bool) -> int:
    _require_server()
    print(f"{LANE}: {set_lane(active)}")
    return 0
