"""Deterministic, sentence-aware chunking with exact character offsets (ING-3).

Sentences are packed greedily up to `max_chars`; the next chunk starts far enough back to repeat at
the trailing whole sentences that fit within `overlap_chars`. A sentence longer than `max_chars` is
cut at whitespace.
Every chunk satisfies `document[start:end] == chunk.text`, and the same text always yields the same
chunks and the same ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from forum_atlas.text import sentence_spans, trim_span

# The default chunk size, in characters, and the overlap between chunks: the ingest flow, the CLI and
# ChunkingOptions all read these.
DEFAULT_CHUNK_CHARS = 1200
DEFAULT_OVERLAP_CHARS = 200


@dataclass(frozen=True)
class ChunkingOptions:
    max_chars: int = DEFAULT_CHUNK_CHARS
    overlap_chars: int = DEFAULT_OVERLAP_CHARS

    def __post_init__(self) -> None:
        if self.max_chars < 50:
            raise ValueError("max_chars must be at least 50")
        if not 0 <= self.overlap_chars < self.max_chars // 2:
            raise ValueError("overlap_chars must be >= 0 and less than half of max_chars")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    start: int
    end: int
    text: str


def _split_long(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    pieces = []
    while end - start > limit:
        cut = text.rfind(" ", start + limit // 2, start + limit)
        cut = cut if cut > start else start + limit
        pieces.append(trim_span(text, start, cut))
        start = trim_span(text, cut, end)[0]
    pieces.append((start, end))
    return [(s, e) for s, e in pieces if e > s]


def chunk_text(text: str, options: ChunkingOptions = ChunkingOptions()) -> list[Chunk]:
    units: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        if end - start <= options.max_chars:
            units.append((start, end))
        else:
            units.extend(_split_long(text, start, end, options.max_chars))
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= options.max_chars:
            j += 1
        start, end = units[i][0], units[j][1]
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        if j + 1 >= len(units):
            break
        # Step back over whole sentences until the overlap is covered, always moving forward.
        k = j + 1
        while k - 1 > i and end - units[k - 1][0] <= options.overlap_chars:
            k -= 1
        i = k
    return chunks


def chunk_key(source_name: str, external_id: str, content_hash: str, chunk: Chunk) -> str:
    """Stable chunk id: same document version and offsets → same key, on any machine."""
    material = f"{source_name}\x1f{external_id}\x1f{content_hash}\x1f{chunk.ordinal}\x1f{chunk.start}\x1f{chunk.end}"
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]
