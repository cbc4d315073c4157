"""Thin Prefect tasks: each wraps plain logic (`forum_atlas.*`) or a repository call
(`forum_atlas.store`), so a flow's run graph shows every step."""

from __future__ import annotations

from forum_atlas.failures import install_expected_failure_lines

# every flow imports its tasks: so in whatever process runs a flow (the CLI, a worker's flow run, a Dask worker),
# an expected failure's run log is its one-line cause, not Prefect's two tracebacks
install_expected_failure_lines()


def flow_run_id() -> str | None:
    """The current Prefect flow run's id, for audit rows; None outside a flow run."""
    from prefect.runtime import flow_run

    return str(flow_run.id) if flow_run.id else None


def untraversed(*args: object) -> list:
    """Task arguments Prefect passes as they are, without walking them (`quote`): for each call it visited every
    field of every argument twice, to resolve futures and to record inputs — ~0.9 s of a warm ask at load ~20,
    for arguments (settings, retrievers, evidence, drafts) that never hold a future or a state."""
    from prefect.utilities.annotations import quote

    return [quote(arg) for arg in args]
