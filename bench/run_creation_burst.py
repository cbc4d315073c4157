"""Run creations in a burst against `atlas ops up`'s Prefect server: its state in SQLite vs in PostgreSQL.

    python -m bench.run_creation_burst [--runs 40] [--concurrency 1 2 6]

For each backend, in one run of this command: `atlas ops up` on a fresh data directory and Prefect home
(ATLAS_PREFECT_DATABASE_URL=sqlite, then the default: the stack's own PostgreSQL), timed to ready (server
healthy, worker started, deployments made), then `--runs` creations of a run of the ingest deployment, N
at a time, each one POST /deployments/{id}/create_flow_run as the UI's run form sends it: no retry, so a
503 (SQLite busy) is a failure an operator sees. The worker polls each second meanwhile (as in the e2e
stack). The runs are scheduled a day ahead, so the worker leaves them; the stack is stopped after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

from bench.report import load_line, table

DEPLOYMENT = "ingest/ingest"


@dataclass
class Burst:
    created: list[str]
    failures: dict[int | str, int]   # HTTP status (or error class) → how many
    latencies: list[float]
    seconds: float


def create_runs(api_url: str, deployment: str, runs: int, concurrency: int, **parameters) -> Burst:
    """`runs` creations of a run of `deployment`, `concurrency` at a time, without retries (as the UI's form)."""
    with httpx.Client(base_url=api_url, timeout=60) as client:
        deployment_id = client.get(f"/deployments/name/{deployment}").raise_for_status().json()["id"]
        later = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()

        def create(_: int) -> tuple[float, int | str, str | None]:
            started = time.perf_counter()
            try:
                response = client.post(f"/deployments/{deployment_id}/create_flow_run", json={
                    "state": {"type": "SCHEDULED", "state_details": {"scheduled_time": later}},
                    "parameters": parameters})
            except httpx.HTTPError as exc:
                return time.perf_counter() - started, type(exc).__name__, None
            run_id = response.json()["id"] if response.status_code == 201 else None
            return time.perf_counter() - started, response.status_code, run_id

        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            done = list(pool.map(create, range(runs)))
        seconds = time.perf_counter() - started
    failures: dict[int | str, int] = {}
    for _, status, run_id in done:
        if run_id is None:
            failures[status] = failures.get(status, 0) + 1
    return Burst([r for _, _, r in done if r], failures, [d for d, _, _ in done], seconds)


def _backend(name: str, database_url: str | None, runs: int, levels: list[int], folder: Path) -> list[tuple]:
    from forum_atlas.config import settings_from_env
    from forum_atlas.runtime import ops_stack

    env = {"ATLAS_DATA_DIR": str(folder / "atlas"), "PREFECT_HOME": str(folder / "prefect"),
           "ATLAS_BM25_KERNEL": "off", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false"}
    saved = {k: os.environ.get(k) for k in [*env, "ATLAS_PREFECT_DATABASE_URL", "PREFECT_API_URL"]}
    os.environ.update(env)
    os.environ.pop("PREFECT_API_URL", None)
    if database_url:
        os.environ["ATLAS_PREFECT_DATABASE_URL"] = database_url
    else:
        os.environ.pop("ATLAS_PREFECT_DATABASE_URL", None)
    settings = settings_from_env()
    try:
        started = time.perf_counter()
        stack, _ = ops_stack.up(settings)
        ready = time.perf_counter() - started
        rows = []
        for level in levels:
            burst = create_runs(stack.api_url, DEPLOYMENT, runs, level, path="/nonexistent")
            failed = sum(burst.failures.values())
            rows.append((name, level, f"{failed} of {runs}", ", ".join(f"{k}×{v}" for k, v in burst.failures.items())
                         or "-", f"{statistics.median(burst.latencies):.2f}",
                         f"{sorted(burst.latencies)[int(0.95 * (runs - 1))]:.2f}", f"{burst.seconds:.1f}",
                         f"{ready:.0f}"))
        return rows
    finally:
        ops_stack.down(settings)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 6])
    args = parser.parse_args()
    rows = []
    # short paths: the PostgreSQL socket lives in the data directory (a Unix socket path is at most 107 bytes)
    with tempfile.TemporaryDirectory(prefix="atlas-burst-", dir="/tmp") as folder:
        for name, url in (("SQLite", "sqlite"), ("PostgreSQL", None)):
            rows += _backend(name, url, args.runs, args.concurrency, Path(folder) / name.lower())
    print(load_line())
    print(table(["Prefect's database", "at a time", "failed", "answers", "median s", "p95 s", "burst s",
                 "ops up s"], rows))


if __name__ == "__main__":
    main()
