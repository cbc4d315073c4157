"""The log files of the project's background processes (flow runners, the shared Prefect API): readable by their
owner only (0600), and written through the redaction filter (forum_atlas.redaction), tracebacks included."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

from forum_atlas.redaction import RedactingStream, filter_all_handlers


def open_private_log(path: Path) -> BinaryIO:
    """`path` emptied for writing, mode 0600 (also when it existed with a wider one)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")


def redact_this_process() -> None:
    """This process's standard streams and every log handler configured so far pass through the redaction filter.
    Called at a background process's start, and again once a library (Prefect) has added its handlers."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))
    filter_all_handlers()
