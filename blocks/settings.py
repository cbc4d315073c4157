"""Settings for a run: the environment first, then the Prefect blocks a deployment names on top."""

from __future__ import annotations

from forum_atlas.config import Settings, settings_from_env


def resolve_settings(database_block: str | None = None, providers_block: str | None = None) -> Settings:
    settings = settings_from_env()
    if database_block:
        from forum_atlas.blocks.database import AtlasDatabase

        settings = AtlasDatabase.load(database_block).apply(settings)
    if providers_block:
        from forum_atlas.blocks.providers import AtlasProviders

        settings = AtlasProviders.load(providers_block).apply(settings)
    return settings


def load_secret(name: str | None) -> str | None:
    """The value of the Prefect Secret block `name` (None when no name is given). Called inside the
    task that needs it, so the value never becomes a task parameter that the Prefect API records."""
    if not name:
        return None
    from prefect.blocks.system import Secret

    return Secret.load(name).get()
