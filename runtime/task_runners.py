"""Where a flow's submitted work runs (issue 13, item 7): Prefect's thread pool by default, or a Dask
cluster — a LocalCluster of N single-threaded worker processes started for the run, or an existing
scheduler by its address.

Operators choose on the command line (`atlas ingest … --dask-workers N` or `--dask-address tcp://host:8786`)
or, for a deployment, in the environment of the flow-run process (`ATLAS_DASK_WORKERS`,
`ATLAS_DASK_ADDRESS`), which the flow's module reads when it is imported. prefect-dask is imported only
when Dask is asked for. The workers only compute: the database stays with the flow's process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

DASK_MISSING = "a Dask task runner needs prefect-dask: pip install 'forum-atlas[dask]'"


def task_runner(dask_workers: int | None = None, dask_address: str | None = None) -> TaskRunner:
    """Threads when neither is given; else a Dask runner (prefect-dask) on a new LocalCluster or at an address."""
    if dask_workers is not None and dask_address:
        raise ValueError("choose one Dask cluster: a number of local workers or a scheduler address, not both")
    if dask_workers is not None and dask_workers < 1:
        raise ValueError(f"a Dask LocalCluster needs at least one worker, not {dask_workers}")
    if dask_workers is None and not dask_address:
        return ThreadPoolTaskRunner()
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ImportError(DASK_MISSING) from None
    # distributed sets its loggers to INFO: each cluster start and stop would print ~30 lines into the run's output.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    if dask_address:
        return DaskTaskRunner(address=dask_address)
    # One thread per process: the work is CPU-bound Python and ONNX, which threads would only share.
    # No dashboard: it needs bokeh and a port, and nothing here serves it.
    return DaskTaskRunner(cluster_kwargs={"n_workers": dask_workers, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None})


def task_runner_from_env(env: Mapping[str, str] | None = None) -> TaskRunner:
    """The runner ATLAS_DASK_WORKERS / ATLAS_DASK_ADDRESS ask for (threads when both are unset)."""
    env = os.environ if env is None else env
    workers = env.get("ATLAS_DASK_WORKERS", "").strip()
    return task_runner(int(workers) if workers else None, env.get("ATLAS_DASK_ADDRESS", "").strip() or None)


def in_process(runner: TaskRunner) -> bool:
    """Whether submitted tasks run in this process (threads), not in Dask workers."""
    return type(runner).__name__ != "DaskTaskRunner"   # not isinstance: prefect-dask may be absent


def describe(runner: TaskRunner) -> str:
    """The runner as a run summary names it: `threadpool`, `dask LocalCluster 2×1` (processes × threads) or
    `dask tcp://host:8786`."""
    if in_process(runner):
        return runner.name
    if runner.address:
        return f"dask {runner.address}"
    cluster = runner.cluster_kwargs
    return f"dask LocalCluster {cluster.get('n_workers', '?')}×{cluster.get('threads_per_worker', '?')}"


def parallel_slots(runner: TaskRunner) -> int:
    """How many submitted tasks the runner can work on at once: a Dask cluster's threads (asked of its
    scheduler, which starts the cluster if it has not started yet), 1 for threads sharing one interpreter."""
    if in_process(runner):
        return 1
    return max(1, sum(runner.client.nthreads().values()))
