"""What a file is, from its first bytes (the extension only tells Markdown from plain text)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from forum_atlas.ingestion.documents.container import DEFAULT_MAX_EXPANDED_BYTES, check_zip
from forum_atlas.ingestion.documents.model import DocumentError

Kind = Literal["pdf", "html", "docx", "markdown", "text"]
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
MARKDOWN_SUFFIXES = (".md", ".markdown")
SNIFF_BYTES = 8192

# Formats recognised only to be refused with a useful name.
_BINARY_SIGNATURES = (
    (b"MZ", "a Windows executable"), (b"\x7fELF", "an ELF executable"), (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"), (b"\xd0\xcf\x11\xe0", "a legacy Office (OLE) file; "
    "save it as .docx or PDF"), (b"\x1f\x8b", "a gzip archive"), (b"{\\rtf", "an RTF document; save it as .docx or PDF"),
)


def sniff(head: bytes, suffix: str) -> Kind:
    """The kind of a file from its first bytes; raises DocumentError for what no reader takes."""
    if not head:
        raise DocumentError("empty", "empty file (0 bytes)")
    if b"%PDF-" in head[:1024]:
        return "pdf"
    for signature, name in _BINARY_SIGNATURES:
        if head.startswith(signature):
            raise DocumentError("unsupported", f"unsupported type: {name}")
    if head.startswith(b"PK\x03\x04"):
        return "docx"   # confirmed by `check_docx` (a ZIP may be anything)
    if (nul := head.find(b"\x00")) >= 0:
        raise DocumentError("unsupported", f"unsupported type: binary content (NUL byte at offset {nul})")
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1024].lower()
    if start.startswith((b"<!doctype html", b"<html")) or (b"<html" in start and b"<body" in head.lower()):
        return "html"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in TEXT_SUFFIXES or suffix in (".html", ".htm"):
        return "text" if suffix not in (".html", ".htm") else "html"
    raise DocumentError("unsupported", f"unsupported type: a {suffix or 'suffix-less'} text file (documents are PDF, "
                                       f"HTML, DOCX, {', '.join(TEXT_SUFFIXES)}; JSONL records go in with --format jsonl)")


def check_docx(path: Path, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES) -> None:
    """A ZIP that holds a Word document and decompresses within the limits (`check_zip`), or DocumentError."""
    if "word/document.xml" not in check_zip(path, max_expanded_bytes=max_expanded_bytes):
        raise DocumentError("unsupported", "unsupported type: a ZIP archive that is not a Word (.docx) document")
