"""Hostile documents, built at test time: DOCX decompression bombs of any size written in milliseconds, HTML
nested 100k levels deep, a one-line page larger than a parser reads. Shared by the tests and bench.documents.

A bomb's `word/document.xml` is one paragraph compressed once after a full flush and repeated: a deflate stream
whose every segment starts from an empty dictionary, so the repeats are byte-identical and the file is written
without compressing the gigabyte it expands to (only its CRC is computed).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
CONTENT_TYPES = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                 '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                 '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                 '<Default Extension="xml" ContentType="application/xml"/>'
                 '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                 'wordprocessingml.document.main+xml"/></Types>')
RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="word/document.xml"/></Relationships>')
DOCUMENT_HEAD = f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{_W}"><w:body>'
DOCUMENT_TAIL = "</w:body></w:document>"
PARAGRAPH = "<w:p><w:r><w:t>All work and no play makes a very long document.</w:t></w:r></w:p>"
SEGMENT_BYTES = 1024 * 1024

DEEP_SENTENCES = ["The harbour pilot counted eleven thousand cyclists in March.",
                  "Collisions involving cyclists fell by two thirds over the year.",
                  "Residents asked the council to make the lane permanent.",
                  "The council will vote on the plan in June.",
                  "The pilot's costs stayed within the original budget."]


def _member(name: str, segments: list[tuple[bytes, int]], expanded: list[tuple[bytes, int]],
            declared_size: int | None = None) -> dict:
    """A deflated member: its compressed `segments` and its content, each as (bytes, repeats)."""
    crc, size = 0, 0
    for data, repeats in expanded:
        for _ in range(repeats):
            crc = zlib.crc32(data, crc)
        size += len(data) * repeats
    return {"name": name.encode(), "segments": segments, "crc": crc,
            "csize": sum(len(data) * repeats for data, repeats in segments),
            "usize": size if declared_size is None else declared_size}


def _deflated(text: str) -> dict:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = text.encode()
    return {"segments": [(compressor.compress(data) + compressor.flush(zlib.Z_FINISH), 1)], "expanded": [(data, 1)]}


def write_zip(path: Path, members: list[dict]) -> Path:
    """A ZIP of deflated members, written segment by segment (no ZIP64: under 4 GiB expanded per member)."""
    directory = b""
    with path.open("wb") as handle:
        for member in members:
            offset = handle.tell()
            fields = (20, 0, 8, 0, 0x21, member["crc"], member["csize"], member["usize"], len(member["name"]), 0)
            handle.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", *fields) + member["name"])
            for data, repeats in member["segments"]:
                for _ in range(repeats):
                    handle.write(data)
            directory += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, offset) + member["name"]
        start = handle.tell()
        handle.write(directory)
        handle.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(directory), start, 0))
    return path


def docx_bomb(path: Path, expanded_bytes: int, *, declared_size: int | None = None) -> Path:
    """A .docx whose document.xml expands to about `expanded_bytes` (one repeated paragraph, ratio ~1,000);
    `declared_size`: the size its directory claims instead (a lying header)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head, tail = DOCUMENT_HEAD.encode(), DOCUMENT_TAIL.encode()
    body = (PARAGRAPH * (SEGMENT_BYTES // len(PARAGRAPH))).encode()
    head_c = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    body_c = compressor.compress(body) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert compressor.compress(body) + compressor.flush(zlib.Z_FULL_FLUSH) == body_c   # the repeat is exact
    tail_c = compressor.compress(tail) + compressor.flush(zlib.Z_FINISH)
    repeats = max(expanded_bytes // len(body), 1)
    document = _member("word/document.xml", [(head_c, 1), (body_c, repeats), (tail_c, 1)],
                       [(head, 1), (body, repeats), (tail, 1)], declared_size)
    parts = [_member(name, **_deflated(text)) for name, text in (("[Content_Types].xml", CONTENT_TYPES),
                                                                  ("_rels/.rels", RELS))]
    return write_zip(path, [*parts, document])


def deep_html(path: Path, depth: int) -> Path:
    """A page whose five sentences sit inside `depth` nested <div>s."""
    body = "".join(f"<p>{sentence}</p>" for sentence in DEEP_SENTENCES)
    path.write_text(f"<!DOCTYPE html><html><head><title>Deep page</title></head><body>{'<div>' * depth}{body}"
                    f"{'</div>' * depth}</body></html>")
    return path


def one_line_html(path: Path, size: int) -> Path:
    """A page of `size` bytes on one line: a paragraph of the same sentence, written in 1 MiB pieces."""
    head, tail = b"<!DOCTYPE html><html><head><title>Long line</title></head><body><p>", b"</p></body></html>"
    piece = (DEEP_SENTENCES[0].encode() + b" ") * (SEGMENT_BYTES // (len(DEEP_SENTENCES[0]) + 1))
    with path.open("wb") as handle:
        handle.write(head)
        left = size - len(head) - len(tail)
        while left > 0:
            handle.write(piece[:left])
            left -= len(piece)
        handle.write(tail)
    return path
