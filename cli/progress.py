"""The terminal progress bar of `atlas ingest`: input bytes, with the files and pages read so far."""

from __future__ import annotations


class TerminalProgress:
    """An `IngestWatcher` (forum_atlas.ingestion.progress) that draws a rich progress bar on the terminal."""

    def __init__(self) -> None:
        self._progress = self._task = None
        self._files, self._pages = 0, 0

    def start(self, total_bytes: int) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

        self._progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                  "{task.fields[read]}", TimeRemainingColumn())
        self._task = self._progress.add_task("ingesting", total=total_bytes, read="")
        self._progress.start()

    def page(self, number: int) -> None:
        self._pages += 1
        self._show()

    def advance(self, bytes_done: int, files: int) -> None:
        self._files = files
        self._progress.update(self._task, completed=bytes_done)
        self._show()

    def _show(self) -> None:
        if self._progress is not None and (self._files or self._pages):
            self._progress.update(self._task, read=f"{self._files} files, {self._pages} pages")

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
