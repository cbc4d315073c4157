"""What a reader returns for one file: the stored text with its page map and sections, or a typed failure."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

# Why a file was not stored. Each is all-or-nothing: a failing file writes nothing, the others go on.
FailureKind = Literal["encrypted", "no_text_layer", "corrupt", "empty", "unsupported", "too_large", "suspicious",
                      "reader_missing", "changed", "skipped", "unreadable"]


class DocumentError(Exception):
    """A file that cannot become a document, with the outcome that says why."""

    def __init__(self, kind: FailureKind, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Section:
    start: int      # character offset of the section's title in the stored text
    level: int      # 1 = top level
    title: str


@dataclass
class ReadDocument:
    """A file's text as stored (what the verbatim audit checks quotes against) and what is known about it.

    `page_starts[i]` is the offset where page i + 1 begins; a format without pages has one page at 0.
    """

    text: str
    kind: str                     # pdf | html | docx | markdown | text
    reader: str                   # library that read it
    reader_version: str
    title: str
    page_starts: list[int] = field(default_factory=lambda: [0])
    sections: list[Section] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    published_at: datetime | None = None
    doi: str | None = None
    url: str | None = None

    @property
    def pages(self) -> int:
        return len(self.page_starts)

    def metadata(self, file: str) -> dict[str, Any]:
        """What the document row keeps besides title and text (forum.documents.metadata)."""
        paged = {"page_starts": self.page_starts} if self.kind == "pdf" else {}   # a web page has no "p. 1"
        return {
            "file": file, "kind": self.kind, "reader": self.reader, "reader_version": self.reader_version, **paged,
            "sections": [[s.start, s.level, s.title] for s in self.sections], "authors": self.authors, "doi": self.doi,
        }


def page_at(page_starts: list[int], offset: int) -> int:
    """1-based page holding the character at `offset`."""
    return max(bisect.bisect_right(page_starts, offset), 1)


def page_range(page_starts: list[int], start: int, end: int) -> tuple[int, int]:
    """First and last page of the characters [start, end)."""
    return page_at(page_starts, start), page_at(page_starts, max(end - 1, start))


def section_at(sections: list[list[Any]] | list[Section], offset: int) -> str | None:
    """Title of the section that holds `offset` (the last one starting at or before it)."""
    title = None
    for entry in sections:
        start, _, name = (entry.start, entry.level, entry.title) if isinstance(entry, Section) else entry
        if start > offset:
            break
        title = name
    return title


def format_pages(first: int | None, last: int | None) -> str:
    """"p. 7" or "p. 7–8"; "" when the document has no page map."""
    if not first:
        return ""
    return f"p. {first}" if not last or last == first else f"p. {first}–{last}"


def missing_reader(what: str, package: str, error: ImportError) -> DocumentError:
    """A reader the main install brings is absent (a broken or partial environment): the file fails alone."""
    return DocumentError("reader_missing", f"{what} files need {package}, which this environment lacks: reinstall "
                                           f"forum-atlas (pip install forum-atlas brings it) ({error})")
