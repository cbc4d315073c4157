"""Writing ingested batches: sources, document versions, chunks and embeddings (ING-1/2/5).

A batch is written in one transaction, or not at all. New content goes in with COPY; content the
database already holds adds nothing (at most its status flags or current version change). Whether input
contradicts a stored source is the domain's rule (`forum_atlas.ingestion.records.source_conflict`): the
writer is given it, and applies it inside the batch's transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import psycopg

from forum_atlas.ingestion.preparation import PreparedBatch, WriteResult
from forum_atlas.ingestion.records import SOURCE_FIELDS, Record, SourceInfo
from forum_atlas.store.db import Database, record_event
from forum_atlas.store.retrieval import passage_place

# Version numbers are max+1 per document: writers of the same corpus take turns for that moment.
_WRITE_LOCK = "forum.documents.write"

# (stored source, what the input states, the stating row's origin) -> the error to raise, or None.
SourceConflict = Callable[[SourceInfo, SourceInfo, str | None], Exception | None]


def _keys(records: Sequence[Record]) -> tuple[list[str], list[str], list[str]]:
    return ([r.source.name for r in records], [r.external_id for r in records], [r.content_hash for r in records])


def known_versions(db: Database, records: Sequence[Record]) -> set[tuple[str, str, str]]:
    """(source name, external id, content hash) of the records whose content is already stored."""
    if not records:
        return set()
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT q.name, q.ext, q.hash
                 FROM unnest(%s::text[], %s::text[], %s::text[]) AS q(name, ext, hash)
                 JOIN forum.sources s ON s.name = q.name
                 JOIN forum.documents d ON d.source_id = s.source_id AND d.external_id = q.ext AND d.content_hash = q.hash""",
            _keys(records),
        ).fetchall()
    return {(r["name"], r["ext"], r["hash"]) for r in rows}


def chunks_without_vectors(db: Database, records: Sequence[Record], embedder_name: str) -> list[dict]:
    """The chunks (chunk_id, heading, body) of these stored versions that have no vector from `embedder_name` yet."""
    if not records:
        return []
    with db.connection() as conn:
        return conn.execute(
            """SELECT c.chunk_id, c.heading, c.body
                 FROM unnest(%s::text[], %s::text[], %s::text[]) AS q(name, ext, hash)
                 JOIN forum.sources s ON s.name = q.name
                 JOIN forum.documents d ON d.source_id = s.source_id AND d.external_id = q.ext AND d.content_hash = q.hash
                 JOIN forum.chunks c ON c.document_id = d.document_id
                WHERE NOT EXISTS (SELECT 1 FROM forum.embeddings e JOIN forum.embedding_models m USING (model_id)
                                   WHERE e.chunk_id = c.chunk_id AND m.name = %s)
                ORDER BY c.chunk_id""",
            (*_keys(records), embedder_name),
        ).fetchall()


def _source_ids(conn: psycopg.Connection, records: Sequence[Record], source_conflict: SourceConflict) -> dict[str, int]:
    """Create the batch's new sources; a known source keeps its metadata, and input that says otherwise
    (or two rows of the batch that disagree) is refused: see `update_source`."""
    first: dict[str, Record] = {}
    for record in records:
        seen = first.setdefault(record.source.name, record)
        if (conflict := source_conflict(seen.source, record.source, record.metadata.get("origin"))) is not None:
            raise conflict
    ids: dict[str, int] = {}
    for name, record in first.items():
        source = record.source
        conn.execute(
            """INSERT INTO forum.sources (name, importance, quality_score, sector, licence, url)
               VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING""",
            (name, source.importance, source.quality_score, source.sector or "general", source.licence, source.url))
        row = conn.execute(f"SELECT source_id, {', '.join(SOURCE_FIELDS)} FROM forum.sources WHERE name = %s",
                           (name,)).fetchone()
        if (conflict := source_conflict(_stored_source(name, row), source, record.metadata.get("origin"))) is not None:
            raise conflict
        ids[name] = row["source_id"]
    return ids


def stored_sources(db: Database, names: Sequence[str]) -> list[SourceInfo]:
    """The stored metadata of those of these sources that are stored."""
    if not names:
        return []
    with db.connection() as conn:
        rows = conn.execute(f"SELECT name, {', '.join(SOURCE_FIELDS)} FROM forum.sources WHERE name = ANY(%s)",
                            (list(names),)).fetchall()
    return [_stored_source(row["name"], row) for row in rows]


def stored_source(db: Database, name: str) -> SourceInfo | None:
    """The stored metadata of the source `name`, or None for a new source."""
    with db.connection() as conn:
        row = conn.execute(f"SELECT {', '.join(SOURCE_FIELDS)} FROM forum.sources WHERE name = %s", (name,)).fetchone()
    return _stored_source(name, row) if row else None


def _stored_source(name: str, row: dict) -> SourceInfo:
    return SourceInfo(name=name, **{f: row[f] for f in SOURCE_FIELDS})


def update_source(db: Database, name: str, changes: dict, reason: str) -> tuple[SourceInfo, SourceInfo]:
    """The one way a source's metadata changes: explicit, with a reason, recorded in the audit log
    (the database refuses any other UPDATE of these columns, sql/036). Returns (before, after)."""
    unknown = set(changes) - set(SOURCE_FIELDS)
    if unknown or not changes:
        raise ValueError(f"nothing to update, or unknown fields {sorted(unknown)}: choose from {', '.join(SOURCE_FIELDS)}")
    if not reason.strip():
        raise ValueError("an update of a source needs a reason")
    with db.transaction() as conn:
        row = conn.execute(f"SELECT {', '.join(SOURCE_FIELDS)} FROM forum.sources WHERE name = %s FOR UPDATE",
                           (name,)).fetchone()
        if row is None:
            raise ValueError(f"no source named {name!r}")
        before = _stored_source(name, row)
        after = replace(before, **changes)
        conn.execute("SELECT set_config('forum.source_update', 'explicit', true)")
        conn.execute(f"UPDATE forum.sources SET {', '.join(f'{f} = %s' for f in changes)}, updated_at = now() WHERE name = %s",
                     (*changes.values(), name))
        record_event(conn, "SOURCE_UPDATED", {"name": name, "reason": reason, "before": asdict(before), "after": asdict(after)})
    return before, after


def list_sources(db: Database) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(
            f"""SELECT s.name, {', '.join('s.' + f for f in SOURCE_FIELDS)}, s.updated_at,
                       (SELECT count(*) FROM forum.documents d WHERE d.source_id = s.source_id AND d.is_current) AS documents
                  FROM forum.sources s ORDER BY s.name""").fetchall()


def _sync_status(conn: psycopg.Connection, records: Sequence[Record], source_ids: dict[str, int]) -> int:
    """Known content: make that version current and carry its retracted/withdrawn/superseded flags."""
    if not records:
        return 0
    params = (
        [source_ids[r.source.name] for r in records], [r.external_id for r in records], [r.content_hash for r in records],
        [r.retracted for r in records], [r.withdrawn for r in records], [r.superseded for r in records],
    )
    query = """FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bool[], %s::bool[], %s::bool[])
                    AS q(source_id, ext, hash, retracted, withdrawn, superseded)"""
    demoted = conn.execute(
        f"""UPDATE forum.documents d SET is_current = false {query}
             WHERE d.source_id = q.source_id AND d.external_id = q.ext AND d.is_current AND d.content_hash <> q.hash""",
        params,
    ).rowcount
    changed = conn.execute(
        f"""UPDATE forum.documents d
               SET is_current = true, retracted = q.retracted, withdrawn = q.withdrawn, superseded = q.superseded {query}
             WHERE d.source_id = q.source_id AND d.external_id = q.ext AND d.content_hash = q.hash
               AND (NOT d.is_current OR (d.retracted, d.withdrawn, d.superseded)
                    IS DISTINCT FROM (q.retracted, q.withdrawn, q.superseded))""",
        params,
    ).rowcount
    return demoted + changed


def _insert_documents(conn: psycopg.Connection, batch: PreparedBatch, source_ids: dict[str, int]) -> dict[tuple[int, str], int]:
    conn.execute(
        """CREATE TEMP TABLE doc_stage (
               source_id bigint, external_id text, content_hash text, title text, body text, url text,
               published_at timestamptz, sector text, metadata jsonb, retracted bool, withdrawn bool, superseded bool
           ) ON COMMIT DROP"""
    )
    with conn.cursor().copy("COPY doc_stage FROM STDIN") as copy:
        for doc in batch.documents:
            r = doc.record
            copy.write_row((source_ids[r.source.name], r.external_id, r.content_hash, r.title, r.text, r.url,
                            r.published_at, r.sector, json.dumps(r.metadata), r.retracted, r.withdrawn, r.superseded))
    # Content that another writer stored since the batch was planned adds nothing.
    conn.execute(
        """DELETE FROM doc_stage s USING forum.documents d
            WHERE d.source_id = s.source_id AND d.external_id = s.external_id AND d.content_hash = s.content_hash"""
    )
    conn.execute(
        """UPDATE forum.documents d SET is_current = false FROM doc_stage s
            WHERE d.source_id = s.source_id AND d.external_id = s.external_id AND d.is_current"""
    )
    rows = conn.execute(
        """INSERT INTO forum.documents (source_id, external_id, version, content_hash, title, body, url, published_at,
                                        sector, metadata, retracted, withdrawn, superseded)
           SELECT s.source_id, s.external_id,
                  coalesce((SELECT max(version) FROM forum.documents d
                             WHERE d.source_id = s.source_id AND d.external_id = s.external_id), 0) + 1,
                  s.content_hash, s.title, s.body, s.url, s.published_at, s.sector, s.metadata,
                  s.retracted, s.withdrawn, s.superseded
             FROM doc_stage s
           RETURNING document_id, source_id, external_id"""
    ).fetchall()
    conn.execute("DROP TABLE doc_stage")
    return {(r["source_id"], r["external_id"]): r["document_id"] for r in rows}


def _insert_chunks(conn: psycopg.Connection, batch: PreparedBatch, source_ids: dict[str, int],
                   document_ids: dict[tuple[int, str], int]) -> list[int]:
    """Stage the chunks of newly inserted documents (COPY), then insert them with their lexical columns
    computed in parallel (sql/072); returns, per chunk of the batch, its chunk_id (or -1 where the
    document was not new)."""
    keys: list[str] = []
    with conn.cursor().copy(
        "COPY forum.chunk_stage (seq, chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable)"
        " FROM STDIN"
    ) as copy:
        for doc in batch.documents:
            r = doc.record
            document_id = document_ids.get((source_ids[r.source.name], r.external_id))
            searchable = not (r.retracted or r.withdrawn or r.superseded)
            for prepared in doc.chunks:
                keys.append(prepared.key)
                if document_id is not None:
                    c = prepared.chunk
                    copy.write_row((len(keys), prepared.key, document_id, c.ordinal, c.start, c.end, r.title, c.text,
                                    searchable))
    conn.execute("SELECT forum.insert_staged_chunks()")
    rows = conn.execute(
        "SELECT chunk_key, chunk_id FROM forum.chunks WHERE document_id = ANY(%s)", (list(document_ids.values()),)
    ).fetchall()
    ids = {row["chunk_key"]: row["chunk_id"] for row in rows}
    return [ids.get(key, -1) for key in keys]


def _model_id(conn: psycopg.Connection, batch: PreparedBatch) -> int:
    return conn.execute(
        "SELECT forum.ensure_embedding_model(%s, %s, %s, %s) AS id",
        (batch.embedder_name, batch.embedder_engine, batch.embedder_version, batch.dim),
    ).fetchone()["id"]


def _insert_embeddings(conn: psycopg.Connection, batch: PreparedBatch, chunk_ids: list[int]) -> int:
    model_id = _model_id(conn, batch)
    written = 0
    with conn.cursor().copy("COPY forum.embeddings (chunk_id, model_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "int4", "vector"])
        for chunk_id, vector in zip(chunk_ids, batch.embeddings):
            if chunk_id >= 0:
                copy.write_row((chunk_id, model_id, vector))
                written += 1
    return written


def _insert_stored_embeddings(conn: psycopg.Connection, batch: PreparedBatch) -> int:
    """Vectors for chunks stored earlier. Another run with the same new embedder may have written some
    since this batch looked (COPY has no ON CONFLICT): they go through a temporary table, and what
    exists already is skipped."""
    model_id = _model_id(conn, batch)
    conn.execute("CREATE TEMPORARY TABLE stored_vectors (chunk_id bigint, embedding vector) ON COMMIT DROP")
    with conn.cursor().copy("COPY stored_vectors (chunk_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "vector"])
        for chunk, vector in zip(batch.stored_chunks, batch.stored_embeddings):
            copy.write_row((chunk.chunk_id, vector))
    return conn.execute(
        """INSERT INTO forum.embeddings (chunk_id, model_id, embedding)
           SELECT chunk_id, %s, embedding FROM stored_vectors ON CONFLICT DO NOTHING""", (model_id,)).rowcount


def write_batch(db: Database, records: Sequence[Record], prepared: PreparedBatch, source_conflict: SourceConflict, *,
                run_id: str | None = None) -> WriteResult:
    """Write one validated batch atomically.

    `records` is the whole batch (known content may change status or current version);
    `prepared` holds the chunks and embeddings of the records whose content is new; a record whose source
    `source_conflict` finds contradicting the stored one (or the batch's first statement of it) fails the batch.
    """
    with db.transaction() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_WRITE_LOCK,))
        source_ids = _source_ids(conn, records, source_conflict)
        result = WriteResult()
        if prepared.documents:
            document_ids = _insert_documents(conn, prepared, source_ids)
            chunk_ids = _insert_chunks(conn, prepared, source_ids, document_ids)
            result.documents_added = len(document_ids)
            result.chunks_added = sum(1 for c in chunk_ids if c >= 0)
            result.embeddings_added = _insert_embeddings(conn, prepared, chunk_ids)
        if prepared.stored_chunks:
            result.stored_chunks_embedded = _insert_stored_embeddings(conn, prepared)
            result.embeddings_added += result.stored_chunks_embedded
        # After the inserts, every record's content is stored: bring current version and flags in
        # line (a no-op for what was just inserted, whatever `prepared` claimed was new).
        result.status_changes = _sync_status(conn, records, source_ids)
        if result.documents_added or result.status_changes or result.stored_chunks_embedded:
            result.event_id = record_event(conn, "INGEST_BATCH", {
                "documents_added": result.documents_added, "chunks_added": result.chunks_added,
                "embeddings_added": result.embeddings_added, "status_changes": result.status_changes,
                "stored_chunks_embedded": result.stored_chunks_embedded,
                "embedder": prepared.embedder_name or None,
                "sources": sorted({r.source.name for r in records}),
                "origins": [records[0].metadata.get("origin"), records[-1].metadata.get("origin")],
            }, run_id=run_id)
    return result


class PassageNotFound(LookupError):
    pass


def passage(db: Database, chunk_id: int) -> dict:
    """A stored chunk with its document, file, page range and section (`atlas passage`)."""
    with db.connection() as conn:
        row = conn.execute(
            f"""SELECT c.chunk_id, c.body, c.start_char, c.end_char, d.document_id, d.version AS document_version,
                       d.title, coalesce(d.url, s.url) AS url, s.name AS source_name, {passage_place()}
                  FROM forum.chunks c JOIN forum.documents d USING (document_id) JOIN forum.sources s USING (source_id)
                 WHERE c.chunk_id = %s""", (chunk_id,)).fetchone()
    if row is None:
        raise PassageNotFound(f"no passage (chunk) {chunk_id}")
    return dict(row)


def register_embedder(db: Database, name: str, engine: str, version: str, dim: int) -> dict:
    """Register the model (idempotent) and return its id, stored vector count and index state."""
    with db.transaction() as conn:
        model_id = conn.execute("SELECT forum.ensure_embedding_model(%s, %s, %s, %s) AS id",
                                (name, engine, version, dim)).fetchone()["id"]
        row = conn.execute(
            """SELECT count(e.chunk_id) AS vectors,
                      to_regclass('forum.' || forum.embedding_index_name(%s)) IS NOT NULL AS indexed
                 FROM forum.embeddings e WHERE e.model_id = %s""",
            (model_id, model_id),
        ).fetchone()
    return {"model_id": model_id, "vectors": row["vectors"], "indexed": row["indexed"]}


def drop_embedding_index(db: Database, model_id: int) -> None:
    with db.transaction() as conn:
        conn.execute("SELECT forum.drop_embedding_index(%s)", (model_id,))


def hnsw_build_memory_mb(vectors: int, dim: int, cap_mb: int = 1024) -> int:
    """The maintenance memory an HNSW build over `vectors` vectors of `dim` gets: twice the graph's estimated
    size plus 64 MB, at most `cap_mb` (Settings.hnsw_build_memory_cap_mb). Past the cap pgvector builds the
    rest of the graph on disk, several times slower."""
    return min(2 * vectors * (4 * dim + 1024) // 2**20 + 64, cap_mb)


def ensure_embedding_index(db: Database, model_id: int) -> bool:
    """Build the model's HNSW index if it is missing, with maintenance memory sized to its graph: the
    graph must fit (PLATFORM: at the default 64 MB a 100k-vector build is several times slower), but a
    parallel build sets up all of the memory it is granted in shared memory first — 1 GB cost a
    10k-vector build ~0.4 s of its ~1.7 s."""
    with db.transaction() as conn:
        graph = conn.execute(
            """SELECT m.dim, count(e.chunk_id) AS vectors
                 FROM forum.embedding_models m LEFT JOIN forum.embeddings e USING (model_id)
                WHERE m.model_id = %s GROUP BY m.dim""", (model_id,)).fetchone()
        if graph:
            memory_mb = hnsw_build_memory_mb(graph["vectors"], graph["dim"], db.settings.hnsw_build_memory_cap_mb)
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{memory_mb}MB",))
        return conn.execute("SELECT forum.ensure_embedding_index(%s) AS built", (model_id,)).fetchone()["built"]


@dataclass(frozen=True)
class Compaction:
    terms: int
    blocks_merged: int
    blocks_written: int
    seconds: float


def compact_bm25_postings(db: Database) -> Compaction:
    """Merge each term's small BM25 posting blocks (sql/012): run after a load, so a query reads
    a few large blocks per term instead of one small block per ingest batch."""
    start = time.perf_counter()
    with db.transaction() as conn:
        row = conn.execute("SELECT * FROM forum.bm25_compact()").fetchone()
    return Compaction(row["terms"], row["blocks_merged"], row["blocks_written"], time.perf_counter() - start)
