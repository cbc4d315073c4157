"""What an ingest run tells whoever watches it in this process as it goes: each stage as it begins, the bytes of
input and the files read, each document page read, and the chunks to embed and embedded — the slow part (a
37-file folder spent 857 s embedding after the bytes read reached 100 %). The CLI's terminal bar and its
line-per-stage output (when stderr is not a terminal) are such watchers; a run that nobody watches (a
deployment's, a test's) tells nobody. A flow parameter could not carry a watcher (parameters are data, shown in
the run form), so the caller sets it for the context it runs the flow in."""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from typing import Protocol


class IngestWatcher(Protocol):
    def stage(self, name: str) -> None:
        """The run begins a stage: "checking the input", "building the vector index", …"""

    def start(self, total_bytes: int) -> None: ...

    def page(self, number: int) -> None:
        """A document's page `number` was read (called by the reader as it goes)."""

    def advance(self, bytes_done: int, files: int) -> None: ...

    def chunks_planned(self, count: int) -> None:
        """A batch was chunked: `count` more chunks to embed (called from the task that prepares it)."""

    def chunks_embedded(self, count: int) -> None:
        """`count` more chunks were embedded (called as the embedder goes, from the task that prepares them)."""

    def close(self) -> None: ...


ingest_watcher: ContextVar[IngestWatcher | None] = ContextVar("ingest_watcher", default=None)


class IngestTally:
    """The counts a watcher shows, and what follows from them: the embedding rate and its time left. Batches are
    prepared on several threads, so the counts change under a lock."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock, self._lock = clock, threading.Lock()
        self.total_bytes = self.bytes_read = self.files = self.pages = 0
        self.planned = self.embedded = 0
        self.bytes_at_planning = 0   # the input read when the last batch was chunked
        self.embed_started: float | None = None

    def start(self, total_bytes: int) -> None:
        self.total_bytes = total_bytes

    def advance(self, bytes_done: int, files: int) -> None:
        self.bytes_read, self.files = bytes_done, files

    def page(self) -> None:
        with self._lock:
            self.pages += 1

    def plan(self, count: int) -> None:
        with self._lock:
            self.planned += count
            self.bytes_at_planning = self.bytes_read
            if self.embed_started is None:
                self.embed_started = self._clock()

    def embed(self, count: int) -> None:
        with self._lock:
            self.embedded += count

    def expected_chunks(self) -> int:
        """The chunks the whole input will make: those planned so far, scaled to all of the input while it is
        still being read (a batch is chunked after it is read)."""
        if not self.planned or self.bytes_at_planning >= self.total_bytes or not self.bytes_at_planning:
            return self.planned
        return max(self.planned, round(self.planned * self.total_bytes / self.bytes_at_planning))

    def rate(self) -> float | None:
        """Chunks embedded per second since the first batch was chunked."""
        if self.embed_started is None or not self.embedded:
            return None
        return self.embedded / max(self._clock() - self.embed_started, 1e-9)

    def seconds_left(self) -> float | None:
        rate = self.rate()
        return None if not rate else max(self.expected_chunks() - self.embedded, 0) / rate
