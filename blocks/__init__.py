"""Prefect configuration blocks (deployments/deploy.sh registers them with the server)."""

from blocks.database import AtlasDatabase
from blocks.providers import AtlasProviders

__all__ = ["AtlasDatabase", "AtlasProviders"]
