"""Files the package carries (migrations, the BM25 kernel's sources, the demo sample, the bundled
series, the lane's question file), found through importlib.resources so that an installed wheel
reads its own copies, never a path relative to a source checkout."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _folder(package: str) -> Path:
    root = files(package)
    if not isinstance(root, Path):  # e.g. a zip import: nothing here can read from it
        raise RuntimeError(f"{package} is not installed as a folder ({root!r}); reinstall forum-atlas with pip")
    return root


def sql_folder() -> Path:
    """The schema: `migrations/` (numbered), `functions/` (one current file per area), `native/`."""
    return _folder("forum_atlas.sql")


def data_file(*parts: str) -> Path:
    """A bundled data file, e.g. `data_file("sample", "scifact_sample.jsonl")`."""
    path = _folder("forum_atlas.data").joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"bundled data file {'/'.join(parts)} is missing from {path.parent}")
    return path
