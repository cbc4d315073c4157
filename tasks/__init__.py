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


def mark_flow_run(*, name: str | None = None, tags: tuple[str, ...] = ()) -> None:
    """Rename the current flow run and/or add tags to it, once what it was about is known (a brief's id, a
    degraded nightly): the UI's run list and its search show them. Nothing outside a flow run."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    if not flow_run.id:
        return
    with get_client(sync_client=True) as client:
        current = client.read_flow_run(flow_run.id)
        client.update_flow_run(flow_run.id, name=name or current.name,
                               tags=[*current.tags, *(t for t in tags if t not in current.tags)])


def ui_url() -> str | None:
    """The Prefect UI's base URL for links in artifacts (derived from PREFECT_API_URL), or None."""
    from prefect.settings import PREFECT_UI_URL

    return (PREFECT_UI_URL.value() or "").rstrip("/") or None


def untraversed(*args: object) -> list:
    """Task arguments Prefect passes as they are, without walking them (`quote`): for each call it visited every
    field of every argument twice, to resolve futures and to record inputs — ~0.9 s of a warm ask at load ~20,
    for arguments (settings, retrievers, evidence, drafts) that never hold a future or a state."""
    from prefect.utilities.annotations import quote

    return [quote(arg) for arg in args]
