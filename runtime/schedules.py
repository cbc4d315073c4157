"""The shipped schedules — the nightly's and the lane's cron — have one definition: the `initial_schedules` of
their deployments in prefect.yaml. `atlas ops deploy` seeds them on a deployment the server does not have yet
(`seed_schedules`), the Docker deployments (deployments/prefect.docker.yaml, `initial_schedules_of: <name>`)
follow them, paused, and the tests read them here (`shipped_schedules`). Prefect ignores both keys: a plain
`prefect deploy` keeps the server's schedules (`schedules: null`)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path


def shipped_schedules(prefect_yaml: Path) -> dict[str, list[dict]]:
    """Deployment name → its `initial_schedules` (cron, timezone, active) as `prefect_yaml` ships them."""
    import yaml   # here, not at the top: `atlas lane status` imports this module through ops_stack

    config = yaml.safe_load(prefect_yaml.read_text())
    return {d["name"]: d["initial_schedules"] for d in config["deployments"] if d.get("initial_schedules")}


def seed_schedules(config: dict, on_server: Collection[str], prefect_yaml: Path) -> None:
    """Give each deployment of a deployment file (`config`, as read) that the server does not have yet its
    shipped schedules: its own `initial_schedules`, or with `initial_schedules_of: <name>` those of `<name>` in
    `prefect_yaml`, paused. Either key leaves the file, so the deployment `prefect deploy` makes has no other."""
    for deployment in config["deployments"]:
        seed = deployment.pop("initial_schedules", None)
        if mirrored := deployment.pop("initial_schedules_of", None):
            seed = [{**schedule, "active": False} for schedule in shipped_schedules(prefect_yaml)[mirrored]]
        if seed and deployment["name"] not in on_server:
            deployment["schedules"] = seed
