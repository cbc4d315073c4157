"""Checks of a command's input that need neither the database nor Prefect, so the CLI runs them before either
starts and wrong input is refused in well under a second instead of after a 25–60 s start-up: a missing path, a
folder with no files, a data directory that is a file or cannot be written, a question with no searchable word."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

from forum_atlas.resources import data_file

# What `atlas search` says of such a query (its BM25 stage's note), and what `atlas ask` refuses it with.
NO_SEARCHABLE_WORDS = "the query has no searchable words (only stop words or punctuation)"

# PostgreSQL's text-search parser splits words at anything but letters and digits; a number is searchable.
_TOKEN = re.compile(r"[^\W_]+")


class PreflightError(ValueError):
    """Input refused before anything started; the message says what to change."""


def check_ingest_path(path: Path, fmt: str = "auto") -> str:
    """The input's format, once it is known to exist and, for documents in a folder, to hold a file."""
    from forum_atlas.ingestion.records import InputError, detect_format, document_files   # ~0.5 s: ingest's only

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: not readable (permission denied)")
    found = detect_format(path) if fmt == "auto" else fmt
    if found == "folder":
        document_files(path)   # "no files found" for an empty folder (hidden files are not documents)
    return found


def check_data_dir(data_dir: Path) -> None:
    """The embedded database's directory (ATLAS_DATA_DIR): one this user can write, or one it can create."""
    data_dir = Path(data_dir)
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    # worded as the embedded server's own check words it (runtime/pgserver.py), which this one runs ahead of
    where = "" if existing == data_dir else f" cannot be created: {existing}"
    if not existing.is_dir():
        raise PreflightError(f"the data directory {data_dir}{where} is a file, not a directory: set ATLAS_DATA_DIR "
                             "to a directory (it is created if missing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f"the data directory {data_dir}{where} is not writable by this user: set ATLAS_DATA_DIR "
                             "to a directory you can write (it is created if missing)")


@cache
def search_stop_words() -> frozenset[str]:
    """The stop list of the database's 'english' text-search configuration (PostgreSQL's english.stop, bundled;
    a test checks it against the embedded server's copy)."""
    return frozenset(data_file("english.stop").read_text(encoding="utf-8").split())


def has_searchable_words(text: str) -> bool:
    """Whether BM25 can search `text` for anything: a word outside the stop list, or a number."""
    stop = search_stop_words()
    return any(token.lower() not in stop for token in _TOKEN.findall(text))


def check_question(text: str) -> None:
    if not has_searchable_words(text):
        raise PreflightError(f"{NO_SEARCHABLE_WORDS}: ask with the words that matter, e.g. the subject and what "
                             "you want to know about it")
