"""Repository for evidence-gathering runs (issue 14): the run (question, plan, outcomes, source
versions) and what became of every record it saw, in one transaction; the records a later brief's
retrieval would have matched but may not cite (with the reason); and the provider cache."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from psycopg.types.json import Jsonb

from forum_atlas.store.db import Database


def record_run(db: Database, *, question: str, plan: dict, redactions: dict[str, int], outcomes: Sequence[dict],
               source_versions: dict[str, Any], records: Iterable[dict], document_sources: Sequence[str] = (),
               flow_run_id: str | None = None) -> int:
    """Store one run and its records; returns the run id. `records` rows carry record_key, source,
    external_id, title, body, doi, pmid, status, reason and score.

    An excluded record that an earlier run ingested (as a document of one of `document_sources`) is
    marked retracted in the same transaction: its chunks leave retrieval at once (ING-6, fails closed)."""
    records = list(records)
    with db.transaction() as conn:
        run_id = conn.execute(
            """INSERT INTO forum.evidence_runs (question, plan, redactions, outcomes, source_versions, flow_run_id)
               VALUES (%s, %s, %s, %s, %s, %s) RETURNING run_id""",
            (question, Jsonb(plan), Jsonb(redactions), Jsonb(list(outcomes)), Jsonb(source_versions), flow_run_id),
        ).fetchone()["run_id"]
        rows = [(run_id, r["record_key"], r["source"], r["external_id"], r["title"], r.get("body", ""), r.get("doi"),
                 r.get("pmid"), r["status"], r["reason"], r.get("score")) for r in records]
        if rows:
            with conn.cursor() as cur:
                cur.executemany(
                    """INSERT INTO forum.evidence_records (run_id, record_key, source, external_id, title, body, doi,
                                                           pmid, status, reason, score)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""", rows)
        excluded = [r["record_key"] for r in records if r["status"] == "excluded"]
        if excluded and document_sources:
            conn.execute(
                """UPDATE forum.documents d SET retracted = true FROM forum.sources s
                    WHERE s.source_id = d.source_id AND s.name = ANY(%s) AND d.external_id = ANY(%s)
                      AND d.is_current AND NOT d.retracted""", (list(document_sources), excluded))
    return run_id


def load_run(db: Database, run_id: int) -> dict:
    with db.connection() as conn:
        run = conn.execute("SELECT * FROM forum.evidence_runs WHERE run_id = %s", (run_id,)).fetchone()
        if run is None:
            raise LookupError(f"no evidence run with id {run_id}")
        run["records"] = conn.execute(
            "SELECT * FROM forum.evidence_records WHERE run_id = %s ORDER BY status, score DESC NULLS LAST, record_key",
            (run_id,)).fetchall()
    return run


def withheld_matches(db: Database, query: str, *, k1: float, b: float, epsilon: float, floor: float) -> list[dict]:
    """The records a gather run saw but retrieval may not return — the newest run excluded them
    (retraction gate) or kept them as context only (licence guard), and no searchable document
    holds them — that BM25 would have scored at least `floor` for `query`, best first.

    Okapi BM25 over the record's title and text with the corpus's analyzer and statistics (N,
    avgdl, df), counting the record itself in N and df (it is not in the corpus); a term's idf is
    floored at `epsilon` (rank_bm25 floors a negative idf at epsilon × the vocabulary's mean idf, which
    would need the record in the corpus), so a record still matches a tiny or empty corpus. Rows:
    record_key, run_id, source, title, status, reason, score."""
    with db.connection() as conn:
        return conn.execute(
            """WITH latest AS (
                   SELECT DISTINCT ON (record_key) record_key, run_id, source, title, status, reason, lexemes
                     FROM forum.evidence_records ORDER BY record_key, run_id DESC),
               withheld AS (
                   SELECT l.* FROM latest l
                    WHERE l.status <> 'ingested'
                      AND NOT EXISTS (SELECT 1 FROM forum.documents d JOIN forum.chunks c USING (document_id)
                                       WHERE d.external_id = l.record_key AND c.searchable)),
               stats AS (SELECT chunk_count::float8 AS n, token_total::float8 / nullif(chunk_count, 0) AS avgdl
                           FROM forum.bm25_stats),
               q AS (SELECT term COLLATE "C" AS term, qtf FROM forum.bm25_query_terms(%(query)s)),
               scored AS (
                   SELECT w.record_key,
                          sum(q.qtf * greatest(ln(s.n + 1 - (coalesce(v.df, 0) + 1) + 0.5)
                                               - ln(coalesce(v.df, 0) + 1 + 0.5), %(epsilon)s)
                              * forum.bm25_term_score(tok.tf, length_of.n, coalesce(nullif(s.avgdl, 0), length_of.n),
                                                      %(k1)s, %(b)s)) AS score
                     FROM withheld w CROSS JOIN stats s
                    CROSS JOIN LATERAL (SELECT forum.tsvector_token_count(w.lexemes)::float8 AS n) length_of
                    CROSS JOIN LATERAL forum.bm25_tokens(w.lexemes) tok
                    JOIN q ON q.term = tok.term
                    LEFT JOIN forum.bm25_terms v ON v.term = q.term
                    GROUP BY w.record_key)
               SELECT w.record_key, w.run_id, w.source, w.title, w.status, w.reason, sc.score
                 FROM scored sc JOIN withheld w USING (record_key)
                WHERE sc.score > 0 AND sc.score >= %(floor)s
                ORDER BY sc.score DESC, w.record_key""",
            {"query": query, "k1": k1, "b": b, "epsilon": epsilon, "floor": floor}).fetchall()


def cached_answers(db: Database, keys: Sequence[tuple[str, str]], *, max_age_hours: float) -> list[dict]:
    """Provider-cache entries younger than `max_age_hours` for these (source, query digest) pairs,
    every source version (the caller matches the version). Rows: source, query_digest,
    source_version, outcome, items, stored_at."""
    if not keys or max_age_hours <= 0:
        return []
    with db.connection() as conn:
        return conn.execute(
            """SELECT c.source, c.query_digest, c.source_version, c.outcome, c.items, c.stored_at
                 FROM forum.evidence_cache c
                 JOIN unnest(%s::text[], %s::text[]) AS k(source, query_digest) USING (source, query_digest)
                WHERE c.stored_at > now() - make_interval(secs => %s)""",
            ([s for s, _ in keys], [d for _, d in keys], max_age_hours * 3600.0)).fetchall()


def store_answers(db: Database, entries: Iterable[dict]) -> int:
    """Upsert provider-cache entries (source, query_digest, source_version, query, outcome, items)."""
    rows = [(e["source"], e["query_digest"], e["source_version"], e["query"], Jsonb(e["outcome"]), Jsonb(e["items"]))
            for e in entries]
    if rows:
        with db.transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO forum.evidence_cache (source, query_digest, source_version, query, outcome, items)
                   VALUES (%s, %s, %s, %s, %s, %s)
                   ON CONFLICT (source, query_digest, source_version) DO UPDATE
                      SET query = EXCLUDED.query, outcome = EXCLUDED.outcome, items = EXCLUDED.items,
                          stored_at = now()""", rows)
    return len(rows)
