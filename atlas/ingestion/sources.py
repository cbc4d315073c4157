"""What a source of documents gets for what its ingest did not state: light enough for the CLI's parser to read."""

from __future__ import annotations

from pathlib import Path

SOURCE_SCORES = (1, 2, 3, 4, 5)   # a source's importance and quality; validation refuses any other value
# What a new source of documents gets for what its ingest did not state (a known source keeps its own).
SOURCE_DEFAULTS = {"importance": 3, "quality_score": 3, "licence": "unknown"}


def default_source_name(path: Path) -> str:
    """The source of documents no name was given for: the folder's name (a single file: its folder's)."""
    path = Path(path).expanduser().resolve()
    return (path if path.is_dir() else path.parent).name or str(path)
