"""Tasks of the deliberate-batch flow: one task run per question, which runs the whole deliberation DAG
(`run_deliberation`) as plain calls — in the flow's process on threads, or in a Dask worker, which opens its
own connections to the database the settings name by URL."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from forum_atlas.config import Settings
from forum_atlas.store.db import shared_database
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.deliberation import DeliberationParameters, PlainStages, run_deliberation

NAME_CHARS = 60   # of the question, in the task run's name


@task(name="database-for-workers", cache_policy=NO_CACHE, persist_result=False)
def database_for_workers(settings: Settings) -> Settings:
    """The settings with the database named by URL. Settings without one mean "the embedded server in this
    process": it is started (and migrated) here, and this process's pooled handle keeps it running until the
    process exits, so workers join it by its URL instead of each starting a server of their own."""
    if settings.database_url:
        return settings
    return settings.with_overrides(database_url=shared_database(settings).url)


def _run_name(parameters: dict[str, Any]) -> str:
    question = parameters["params"].question
    return "deliberate: " + (question if len(question) <= NAME_CHARS else question[:NAME_CHARS - 1] + "…")


@task(name="deliberate-question", task_run_name=_run_name, cache_policy=NO_CACHE, persist_result=False)
def deliberate_question(params: DeliberationParameters, settings: Settings) -> dict[str, Any]:
    """One question's brief, persisted in its own transaction; returns what the batch's table shows."""
    return run_deliberation(params, settings, PlainStages, flow_run_id).summary()
