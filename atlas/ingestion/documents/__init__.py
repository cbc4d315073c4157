"""Readers of real documents (PDF, HTML, DOCX, Markdown, plain text), chosen by content.

`read_document` turns one file into a `ReadDocument` (the text as stored, its page map, sections and
metadata) or raises `DocumentError` with the typed outcome that says why it cannot be stored. One reader
per module; the PDF reader is core, HTML and DOCX readers name the extra to install when missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from pathlib import Path

from forum_atlas.ingestion.documents.detect import SNIFF_BYTES, check_docx, sniff
from forum_atlas.ingestion.documents.model import DocumentError, ReadDocument
from forum_atlas.ingestion.documents.text import read_text

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024

__all__ = ["DEFAULT_MAX_FILE_BYTES", "DocumentError", "ReadDocument", "read_document", "release_freed_memory"]


def read_document(path: Path, *, password: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                  on_page: Callable[[int], None] | None = None) -> ReadDocument:
    """Read one file by what its bytes say it is. Raises DocumentError (a typed outcome) for a file that
    cannot become a document; nothing else about the file is kept then."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_file_bytes:
        raise DocumentError("too_large", f"above the size limit: {size:,} bytes > {max_file_bytes:,}")
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    kind = sniff(head, path.suffix.lower())
    if kind == "pdf":
        from forum_atlas.ingestion.documents.pdf import read_pdf

        return read_pdf(path, password=password, on_page=on_page)
    if kind == "docx":
        check_docx(path)
        from forum_atlas.ingestion.documents.docx import read_docx

        return read_docx(path, path.read_bytes())
    if kind == "html":
        from forum_atlas.ingestion.documents.html import read_html

        return read_html(path)
    return read_text(path, path.read_bytes(), kind)


def _malloc_trim() -> Callable[[int], int] | None:
    libc = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(libc), "malloc_trim", None) if libc else None


_MALLOC_TRIM = _malloc_trim()


def release_freed_memory() -> None:
    """Give the heap that reading freed back to the system (glibc keeps it otherwise; elsewhere: nothing).

    Reading a batch of PDFs frees PDFium's parse state and the page lines in bulk. glibc keeps that memory
    in the reading thread's arena, and the batch's chunking and embedding, in other threads, then peak on
    top of it: about 15 MB more for a 1,000-page PDF than the same text ingested as JSONL.
    """
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
