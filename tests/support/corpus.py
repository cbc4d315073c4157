"""Small helpers to put real or hand-made documents into a test database through the ingestion
write path, and to read back what BM25 sees."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import SCIFACT_SOURCE, Record, SourceInfo, source_conflict
from forum_atlas.store.db import Database
from forum_atlas.store.documents import known_versions, write_batch

WHOLE = ChunkingOptions(max_chars=10_000, overlap_chars=0)
TEST_SOURCE = SourceInfo(name="test source", importance=3, quality_score=3, licence="CC0")


def ingest(db: Database, records: Sequence[Record], *, embedder=None, options: ChunkingOptions = WHOLE):
    """Write records as the ingest flow does: content already stored only updates its status flags."""
    known = known_versions(db, records)
    new = [r for r in records if (r.source.name, r.external_id, r.content_hash) not in known]
    return write_batch(db, list(records), prepare(new, embedder or HashedEmbedder(), options), source_conflict)


def record(external_id: str, text: str, *, title: str = "", sector: str = "general",
           published_at: datetime | None = None, **flags: bool) -> Record:
    return Record(external_id=external_id, title=title, text=text, source=TEST_SOURCE, sector=sector,
                  published_at=published_at, **flags)


def scifact_records(shared_data: Path, limit: int | None = None) -> list[Record]:
    out = []
    with (shared_data / "scifact" / "beir" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append(Record(external_id=row["_id"], title=row["title"], text=row["text"], source=SCIFACT_SOURCE,
                              sector=SCIFACT_SOURCE.sector))
            if limit is not None and len(out) == limit:
                break
    return out


def scifact_queries(shared_data: Path) -> list[tuple[str, str]]:
    with (shared_data / "scifact" / "beir" / "queries.jsonl").open(encoding="utf-8") as handle:
        return [(q["_id"], q["text"]) for q in map(json.loads, handle)]


def bm25_corpus(conn) -> tuple[list[int], list[list[str]]]:
    """(chunk ids, token lists) of the searchable chunks, as rank_bm25 must see them: each lexeme
    repeated by its number of positions."""
    rows = conn.execute(
        """SELECT c.chunk_id,
                  coalesce((SELECT array_agg(u.lexeme ORDER BY u.lexeme) FROM unnest(c.lexemes) u), '{}') AS terms,
                  coalesce((SELECT array_agg(coalesce(array_length(u.positions, 1), 1) ORDER BY u.lexeme)
                              FROM unnest(c.lexemes) u), '{}') AS tfs
             FROM forum.chunks c WHERE c.searchable ORDER BY c.chunk_id""").fetchall()
    return ([r["chunk_id"] for r in rows],
            [[t for t, n in zip(r["terms"], r["tfs"]) for _ in range(n)] for r in rows])


def query_tokens(conn, text: str) -> list[str]:
    rows = conn.execute("SELECT term, qtf FROM forum.bm25_query_terms(%s)", (text,)).fetchall()
    return [r["term"] for r in rows for _ in range(r["qtf"])]
