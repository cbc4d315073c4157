"""Settings for a run: the environment first, then the Prefect blocks the run picked on top."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forum_atlas.config import Settings, settings_from_env
from forum_atlas.redaction import remember_secret

if TYPE_CHECKING:
    from prefect.blocks.system import Secret

    from forum_atlas.blocks.database import AtlasDatabase
    from forum_atlas.blocks.providers import AtlasProviders


def resolve_settings(database_block: AtlasDatabase | None = None,
                     providers_block: AtlasProviders | None = None) -> Settings:
    """The environment, then each block a run picked (typed flow parameters: the run form's block pickers)."""
    settings = settings_from_env()
    for block in (database_block, providers_block):
        if block is not None:
            settings = block.apply(settings)
    return settings


def secret_value(secret: Secret | None) -> str | None:
    """The value of the Secret block a run picked (None when it picked none). Read only inside the task
    that calls the provider: until then the value stays a SecretStr, which every serialisation masks, so
    flow-run parameters, logs and task inputs show `**********`."""
    if secret is None:
        return None
    value = secret.get()
    remember_secret(value)   # whatever this process writes from now on masks it
    return value
