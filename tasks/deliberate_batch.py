"""Tasks of the deliberate-batch flow: the database its Dask workers join. (Its task per question runs the deliberate
flow's DAG, so it is defined with the batch flow, `forum_atlas.flows.deliberate_batch`.)"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from forum_atlas.config import Settings
from forum_atlas.store.db import shared_database


@task(name="database-for-workers", cache_policy=NO_CACHE, persist_result=False)
def database_for_workers(settings: Settings) -> Settings:
    """The settings with the database named by URL. Settings without one mean "the embedded server in this
    process": it is started (and migrated) here, and this process's pooled handle keeps it running until the
    process exits, so workers join it by its URL instead of each starting a server of their own."""
    if settings.database_url:
        return settings
    return settings.with_overrides(database_url=shared_database(settings).url)
