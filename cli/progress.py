"""`atlas ingest`'s progress, on stderr: on a terminal, a bar for the input read (bytes, files, pages) and one for
the embedding (chunks, chunks/s, time left), with each stage printed above them; elsewhere (a file, a pipe), one
line per stage and a line on the embedding at most every LINE_SECONDS."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from forum_atlas.ingestion.progress import IngestTally

LINE_SECONDS = 15.0


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class _TallyingWatcher:
    """An `IngestWatcher` (forum_atlas.ingestion.progress) that counts in an `IngestTally`, then shows it."""

    def __init__(self, tally: IngestTally) -> None:
        self.tally = tally

    def start(self, total_bytes: int) -> None:
        self.tally.start(total_bytes)

    def page(self, number: int) -> None:
        self.tally.page()
        self._show()

    def advance(self, bytes_done: int, files: int) -> None:
        self.tally.advance(bytes_done, files)
        self._show()

    def chunks_planned(self, count: int) -> None:
        self.tally.plan(count)
        self._show()

    def chunks_embedded(self, count: int) -> None:
        self.tally.embed(count)
        self._show()

    def _show(self) -> None:
        raise NotImplementedError


class TerminalProgress(_TallyingWatcher):
    """Rich progress bars on the terminal."""

    def __init__(self) -> None:
        super().__init__(IngestTally())
        self._progress = self._reading = self._embedding = None

    def stage(self, name: str) -> None:
        from rich.console import Console

        (self._progress.console if self._progress else Console(stderr=True)).print(f"ingest: {name}")

    def start(self, total_bytes: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TimeRemainingColumn

        super().start(total_bytes)
        self._progress = Progress("[progress.description]{task.description}", BarColumn(), "{task.fields[done]}",
                                  "{task.fields[detail]}", TimeRemainingColumn(), console=Console(stderr=True))
        self._reading = self._progress.add_task("reading  ", total=total_bytes, done="", detail="")
        self._embedding = self._progress.add_task("embedding", total=None, done="", detail="")
        self._progress.start()

    def _show(self) -> None:
        if self._progress is None:
            return
        t = self.tally
        self._progress.update(self._reading, completed=t.bytes_read, done=f"{t.bytes_read / 1e6:.1f}/"
                              f"{t.total_bytes / 1e6:.1f} MB", detail=f"{t.files} files, {t.pages} pages")
        rate = t.rate()
        self._progress.update(self._embedding, completed=t.embedded, total=t.expected_chunks() or None,
                              done=f"{t.embedded}/{'~' if t.expected_chunks() > t.planned else ''}"
                                   f"{t.expected_chunks()} chunks",
                              detail=f"{rate:.1f} chunks/s" if rate else "")

    def close(self) -> None:
        if self._progress is not None:
            self._show()
            self._progress.stop()


class LineProgress(_TallyingWatcher):
    """For output that is not a terminal: a line per stage, and one on the reading and the embedding at most every
    `every` seconds (and when the last chunk planned is embedded)."""

    def __init__(self, stream: TextIO | None = None, every: float = LINE_SECONDS, clock=time.monotonic) -> None:
        super().__init__(IngestTally(clock))
        self._stream, self._every, self._clock = stream, every, clock
        self._last = clock()

    def _print(self, line: str) -> None:
        # write, not print: the flow logs its prints (log_prints), and these lines are the terminal's
        stream = self._stream or sys.stderr
        stream.write(f"ingest: {line}\n")
        stream.flush()

    def stage(self, name: str) -> None:
        self._print(name)

    def start(self, total_bytes: int) -> None:
        super().start(total_bytes)
        self._last = self._clock()

    def chunks_embedded(self, count: int) -> None:
        self.tally.embed(count)
        self._show(force=self.tally.embedded >= self.tally.expected_chunks())

    def _show(self, force: bool = False) -> None:
        if force or self._clock() - self._last >= self._every:
            self._last = self._clock()
            self._print(self.line())

    def line(self) -> str:
        t = self.tally
        read = f"read {100 * t.bytes_read / max(t.total_bytes, 1):.0f} % ({t.files} files, {t.pages} pages)"
        if not t.planned:
            return read
        rate = t.rate()
        expected = t.expected_chunks()
        return (f"{read}; embedded {t.embedded} of {'~' if expected > t.planned else ''}{expected} chunks"
                + (f", {rate:.1f} chunks/s, {_duration(t.seconds_left())} left" if rate else ""))

    def close(self) -> None:
        pass
