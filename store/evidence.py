"""Repository for evidence-gathering runs (issue 14): the run (question, plan, outcomes, source
versions) and what became of every record it saw, in one transaction; and the exclusion reasons a
later brief needs for a record it would cite."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from psycopg.types.json import Jsonb

from forum_atlas.store.db import Database


def record_run(db: Database, *, question: str, plan: dict, redactions: dict[str, int], outcomes: Sequence[dict],
               source_versions: dict[str, Any], records: Iterable[dict], flow_run_id: str | None = None) -> int:
    """Store one run and its records; returns the run id. `records` rows carry record_key, source,
    external_id, title, doi, pmid, status, reason and score."""
    with db.transaction() as conn:
        run_id = conn.execute(
            """INSERT INTO forum.evidence_runs (question, plan, redactions, outcomes, source_versions, flow_run_id)
               VALUES (%s, %s, %s, %s, %s, %s) RETURNING run_id""",
            (question, Jsonb(plan), Jsonb(redactions), Jsonb(list(outcomes)), Jsonb(source_versions), flow_run_id),
        ).fetchone()["run_id"]
        rows = [(run_id, r["record_key"], r["source"], r["external_id"], r["title"], r.get("doi"), r.get("pmid"),
                 r["status"], r["reason"], r.get("score")) for r in records]
        if rows:
            with conn.cursor() as cur:
                cur.executemany(
                    """INSERT INTO forum.evidence_records (run_id, record_key, source, external_id, title, doi, pmid,
                                                           status, reason, score)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""", rows)
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


def exclusion_reasons(db: Database, record_keys: Sequence[str]) -> dict[str, str]:
    """Why each of these records (doi:…, pmid:…) was excluded by the newest run that excluded it."""
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT DISTINCT ON (record_key) record_key, reason FROM forum.evidence_records
                WHERE status = 'excluded' AND record_key = ANY(%s) ORDER BY record_key, run_id DESC""",
            (list(record_keys),)).fetchall()
    return {r["record_key"]: r["reason"] for r in rows}
