"""Prefect configuration blocks: register with `prefect block register -m blocks`."""

from blocks.database import AtlasDatabase
from blocks.providers import AtlasProviders

__all__ = ["AtlasDatabase", "AtlasProviders"]
