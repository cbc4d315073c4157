"""Settings for a run: the environment first, then the Prefect blocks a deployment names on top."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forum_atlas.config import Settings, settings_from_env

if TYPE_CHECKING:
    from forum_atlas.blocks.database import AtlasDatabase
    from forum_atlas.blocks.providers import AtlasProviders


def resolve_settings(database_block: AtlasDatabase | str | None = None,
                     providers_block: AtlasProviders | str | None = None) -> Settings:
    """Each block is given as the instance a typed flow parameter receives (the UI's block picker) or, for
    callers that still pass names, as the name of a saved block document."""
    settings = settings_from_env()
    if database_block:
        from forum_atlas.blocks.database import AtlasDatabase

        block = AtlasDatabase.load(database_block) if isinstance(database_block, str) else database_block
        settings = block.apply(settings)
    if providers_block:
        from forum_atlas.blocks.providers import AtlasProviders

        block = AtlasProviders.load(providers_block) if isinstance(providers_block, str) else providers_block
        settings = block.apply(settings)
    return settings


def load_secret(name: str | None) -> str | None:
    """The value of the Prefect Secret block `name` (None when no name is given). Called inside the
    task that needs it, so the value never becomes a task parameter that the Prefect API records."""
    if not name:
        return None
    from prefect.blocks.system import Secret

    return Secret.load(name).get()
