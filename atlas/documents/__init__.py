"""Readers of real documents (PDF, HTML, DOCX, Markdown, plain text), chosen by content.

`read_document` turns one file into a `ReadDocument` (the text as stored, its page map, sections and
metadata) or raises `DocumentError` with the typed outcome that says why it cannot be stored. One reader
per module; the PDF reader is core, HTML and DOCX readers name the extra to install when missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from forum_atlas.documents.detect import SNIFF_BYTES, check_docx, sniff
from forum_atlas.documents.model import DocumentError, ReadDocument
from forum_atlas.documents.text import read_text

DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024

__all__ = ["DEFAULT_MAX_FILE_BYTES", "DocumentError", "ReadDocument", "read_document"]


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
        from forum_atlas.documents.pdf import read_pdf

        return read_pdf(path, password=password, on_page=on_page)
    if kind == "docx":
        check_docx(path)
        from forum_atlas.documents.docx import read_docx

        return read_docx(path, path.read_bytes())
    if kind == "html":
        from forum_atlas.documents.html import read_html

        return read_html(path, path.read_bytes())
    return read_text(path, path.read_bytes(), kind)
