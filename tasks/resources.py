"""Per-process resources shared by tasks: settings and one connection pool per database URL."""

from __future__ import annotations

import atexit
import threading

from atlas.config import Settings, settings_from_env
from atlas.embeddings import Embedder, make_embedder
from store.db import Database

_pools: dict[tuple, Database] = {}
_embedders: dict[tuple, Embedder] = {}
_lock = threading.Lock()


def resolve_settings(database_block: str | None = None, providers_block: str | None = None) -> Settings:
    """Environment first, then the named Prefect blocks on top (a deployment's parameters name them)."""
    settings = settings_from_env()
    if database_block:
        from blocks.database import AtlasDatabase

        settings = AtlasDatabase.load(database_block).apply(settings)
    if providers_block:
        from blocks.providers import AtlasProviders

        settings = AtlasProviders.load(providers_block).apply(settings)
    return settings


def database(settings: Settings) -> Database:
    key = (settings.database_url, str(settings.data_dir))
    with _lock:
        if key not in _pools:
            _pools[key] = Database.open(settings)
        return _pools[key]


def embedder(settings: Settings) -> Embedder:
    """One embedder per configuration and process (model-backed ones are slow to load)."""
    key = (settings.embedder, settings.embed_dim)
    with _lock:
        if key not in _embedders:
            # Only the hashed embedder has a free dimension; the others are fixed by their model.
            dim = settings.embed_dim if settings.embedder == "hashed" else None
            _embedders[key] = make_embedder(settings.embedder, dim=dim)
        return _embedders[key]


@atexit.register
def _close_pools() -> None:
    for pool in _pools.values():
        pool.close()
