"""Checks of a command's input that need neither the database nor Prefect, so the CLI runs them before either
starts and wrong input is refused in well under a second instead of after a 25–60 s start-up: a missing path, a
folder with no files, a data directory that is a file or cannot be written, a question with no searchable word."""

from __future__ import annotations

import errno
import os
import re
import shutil
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
    check_writable(existing)


# Below this much free space PostgreSQL cannot initialise a cluster (~40 MB) or write its WAL segments (16 MB each).
MIN_FREE_BYTES = 64 * 1024 * 1024
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL = {errno.ENOSPC, errno.EDQUOT}


def check_writable(where: Path, error: type[ValueError] = PreflightError) -> None:
    """Whether the embedded PostgreSQL can write its files in `where`, by writing there (a permission check cannot
    see a read-only mount or a full disk): else `error`, in one line naming the cause and the fix."""
    probe = Path(where) / f".atlas-write-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"probe")
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)
    except OSError as exc:
        if exc.errno in _NOT_WRITABLE:
            raise error(f"the data directory {where} is not writable ({exc.strerror}): the embedded PostgreSQL keeps "
                        "its files there; make it writable (a read-only mount?), or set ATLAS_DATA_DIR to a writable "
                        "directory") from None
        if exc.errno in _FULL:
            raise error(f"the disk of the data directory {where} is full ({exc.strerror}): free space there, or set "
                        "ATLAS_DATA_DIR to a directory on a disk with room") from None
        raise
    free = shutil.disk_usage(where).free
    if free < MIN_FREE_BYTES:
        raise error(f"the disk of the data directory {where} is nearly full ({free // 2**20} MiB free; the embedded "
                    f"PostgreSQL needs {MIN_FREE_BYTES // 2**20} MiB): free space there, or set ATLAS_DATA_DIR to a "
                    "directory on a disk with room")


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
