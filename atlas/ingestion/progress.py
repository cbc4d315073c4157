"""What an ingest run tells whoever watches it in this process as it reads: the bytes of input and the
files done, and each document page read. The CLI's terminal bar is one such watcher; a run that nobody
watches (a deployment's, a test's) tells nobody. A flow parameter could not carry a watcher (parameters
are data, shown in the run form), so the caller sets it for the context it runs the flow in."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol


class IngestWatcher(Protocol):
    def start(self, total_bytes: int) -> None: ...

    def page(self, number: int) -> None:
        """A document's page `number` was read (called by the reader as it goes)."""

    def advance(self, bytes_done: int, files: int) -> None: ...

    def close(self) -> None: ...


ingest_watcher: ContextVar[IngestWatcher | None] = ContextVar("ingest_watcher", default=None)
