"""Markdown and plain-text files, stored exactly as written (their content hash is what earlier ingests stored)."""

from __future__ import annotations

import re
from pathlib import Path

from forum_atlas.ingestion.documents.model import DocumentError, ReadDocument, Section

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def decode_utf8(data: bytes, where: str) -> str:
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DocumentError("unsupported", f"{where}: binary content (NUL byte at offset {nul}); only UTF-8 text can be ingested")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError("corrupt", f"{where}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                                       f"re-encode the file as UTF-8") from None


def title_of(text: str, fallback: str) -> str:
    """A Markdown file's first heading, if the file starts with one; else the file name."""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip() or fallback
        if line.strip():
            break
    return fallback


def read_text(path: Path, data: bytes, kind: str) -> ReadDocument:
    text = decode_utf8(data, path.name)
    if not text.strip():
        raise DocumentError("empty", "the file holds only whitespace")
    sections = ([Section(m.start(), len(m.group(1)), m.group(2)) for m in _HEADING.finditer(text)]
                if kind == "markdown" else [])
    return ReadDocument(text=text, kind=kind, reader="utf-8", reader_version="1", title=title_of(text, path.stem),
                        sections=sections)
