"""Prefect configuration blocks (deployments/deploy.sh registers them with the server)."""

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders

__all__ = ["AtlasDatabase", "AtlasProviders"]
