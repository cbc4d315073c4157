"""Series connectors, one module each: `file` (FRED CSV exports on disk) and `fred` (FRED over HTTP)."""

from __future__ import annotations

from forum_atlas.series.connectors.base import FetchedVintage, SeriesConnector
from forum_atlas.series.connectors.file import FileConnector


def make_connector(name: str, **options: object) -> SeriesConnector:
    if name == "file":
        return FileConnector(**options)  # type: ignore[arg-type]
    if name == "fred":
        from forum_atlas.series.connectors.fred import FredConnector

        return FredConnector(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown series connector {name!r}: choose file or fred")


__all__ = ["FetchedVintage", "FileConnector", "SeriesConnector", "make_connector"]
