"""Issue 25, item 1: `atlas audit verify` recomputes every digest, anchor and chain link in Python
from raw rows. A superuser who replaces the database's verifying and digest functions with no-ops,
then edits or deletes rows of every protected table, is still caught against the exported head,
by table and row."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.cli.main import main
from forum_atlas.deliberation.verify import verify_brief
from forum_atlas.integrity import PROTECTED, content_digest, record_text
from forum_atlas.store.briefs import persist_brief, stored_brief
from forum_atlas.store.db import chain_head, record_event, verify_audit
from forum_atlas.tasks.scoring import run_scoring
from tests.store.test_briefs import corpus, make_record  # noqa: F401  (corpus is a fixture, reused)
from tests.store.test_tamper_evidence import scored  # noqa: F401  (a fixture: vintages, a bound forecast, scores)

# The database functions a verification could have leaned on: each replaced by a no-op below.
REPLACED = {"content_digest": "repeat('0', 64)", "sha256_text": "repeat('0', 64)", "event_hash": "repeat('0', 64)",
            "event_row_hash": "repeat('0', 64)", "digest_anchor": "'{}'::jsonb", "epoch_us": "0::bigint",
            "day_number": "0", "float_bits": "''", "citation_verbatim_matches": "true",
            "citation_verbatim_matches_v1": "true"}


@pytest.fixture
def everything(db, corpus, scored):  # noqa: F811
    """Rows in every protected table: documents and chunks, two briefs (snapshots, sections, claims,
    citations, provider calls), vintages and observations, a bound forecast and its scores (brier-v1,
    and log-v1 and brier-v2 whose extra columns enter the digest)."""
    for version in ("log-v1", "brier-v2"):
        with db.transaction() as conn:
            assert run_scoring(conn, mode="backfill", as_of=datetime(2026, 3, 31, tzinfo=UTC),
                               scoring_version=version).inserted
    kept = persist_brief(db, make_record(corpus))
    deleted = persist_brief(db, make_record(corpus, question="Will storage keep growing?"))
    with db.connection() as conn:
        counts = {p.table: conn.execute(f"SELECT count(*) AS n FROM forum.{p.table}").fetchone()["n"]
                  for p in PROTECTED}
    assert all(counts.values()), counts
    return kept.brief_id, deleted.brief_id


def _findings(report) -> set[tuple]:
    return {(p["table_name"], p["row_id"], p["problem"].split(" (")[0]) for p in report.content}


def test_python_digests_equal_the_triggers_on_every_table(db, everything):
    with db.connection() as conn:
        report = verify_audit(conn)
        recorded = {r["table_name"]: r["n"] for r in conn.execute(
            "SELECT table_name, count(*) AS n FROM forum.content_digests GROUP BY 1")}
    assert report.intact, report.content
    assert report.rows_read == recorded and report.unrecomputed == []
    assert set(recorded) == {p.table for p in PROTECTED}


def test_record_text_is_postgresql_record_out(db):
    values = ["plain", "", None, 'say "hi"', "back\\slash", "(paren)", "a,b", "tab\there", "new\nline", " lead",
              "nbsp\u00a0é ✓ \U0001f600", "-12", "{\"k\": [1.10, 2]}"]
    with db.connection() as conn:
        expected = conn.execute("SELECT ROW(" + ", ".join(["%s::text"] * len(values)) + ")::text AS t",
                                values).fetchone()["t"]
    assert record_text(values) == expected


def test_tricky_values_digest_alike_in_python_and_in_the_trigger(db):
    """Forms the database could print differently from Python: quoting, unicode, float bits (a
    denormal, -0, thirds), numbers in jsonb, microsecond times, dates before 2000, NULLs."""
    question = 'Will "it", (or \\ it)\tgo\nup\u00a0— ✓? '
    distribution = '{"b": 1.10, "a": [1e-7, 0.30000000000000004, -0.0], "é": null, "": "x"}'
    with db.transaction() as conn:
        conn.execute(
            """INSERT INTO forum.forecasts (question, requested_via, issued_at, confidence_target, n_samples, seed,
                                            base_rate, probability, ci_low, ci_high, ci_method, ci_basis,
                                            distribution, drivers, engine, flow_run_id)
               VALUES (%s, 'cli', '1999-12-31 23:59:59.999999+00', %s, 1000, -7, %s, %s, %s, 1.0, 'wilson',
                       'monte_carlo_sampling_95', %s::jsonb, '[]', '{}', NULL)""",
            (question, 0.95, 1 / 3, 1 / 3, 5e-324, distribution))
        conn.execute("""INSERT INTO forum.sources (name, importance, quality_score, licence) VALUES ('S', 3, 3, 'x')""")
        conn.execute("""INSERT INTO forum.documents (source_id, external_id, version, content_hash, title, body, url,
                                                     published_at, sector, metadata)
                        SELECT source_id, 'd"1', 1, repeat('1', 64), '', 'Body, with (parens).', NULL,
                               '1960-02-29 12:00:00.5+05:30', '', %s::jsonb FROM forum.sources""",
                     ('{"pages": [1, 2.50], "note": "a\\"b"}',))
        record_event(conn, "TEST_EVENT", {"tricky": True})
    with db.connection() as conn:
        report = verify_audit(conn)
        sql = conn.execute("SELECT forum.content_digest(f) AS d FROM forum.forecasts f").fetchone()["d"]
        row = conn.execute("SELECT *, distribution::text AS distribution, drivers::text AS drivers, "
                           "engine::text AS engine FROM forum.forecasts").fetchone()
    assert report.intact, report.content
    assert report.rows_read["forecasts"] == 1 and report.rows_read["documents"] == 1
    spec = next(p for p in PROTECTED if p.table == "forecasts")
    assert content_digest(spec, [row[c] for c, _ in spec.columns]) == sql
    assert row["ci_low"] == 5e-324


def _superuser(database_url):
    return psycopg.connect(database_url, autocommit=True, row_factory=dict_row)


def _replace_functions_with_no_ops(conn) -> int:
    """Every overload of every function in REPLACED, rewritten to return a constant."""
    overloads = conn.execute(
        """SELECT p.proname, pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'forum' AND p.proname = ANY(%s)""", (list(REPLACED),)).fetchall()
    for f in overloads:
        conn.execute(f"CREATE OR REPLACE FUNCTION forum.{f['proname']}({f['args']}) RETURNS {f['result']} "
                     f"LANGUAGE sql AS $$ SELECT {REPLACED[f['proname']]} $$")
    # The probe's function, and the chain's, as an attacker would leave them: saying "nothing wrong".
    conn.execute("""CREATE FUNCTION forum.verify_content_digests()
                    RETURNS TABLE (table_name text, row_id bigint, event_id bigint, problem text)
                    LANGUAGE sql AS $$ SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::text WHERE false $$""")
    conn.execute("""CREATE FUNCTION forum.verify_event_chain() RETURNS TABLE (event_id bigint, problem text)
                    LANGUAGE sql AS $$ SELECT NULL::bigint, NULL::text WHERE false $$""")
    return len(overloads)


def test_no_op_functions_and_tampering_in_every_table_are_caught_against_the_head(
        db, everything, database_url, monkeypatch, capsys):
    kept, deleted = everything
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    assert main(["audit", "head"]) == 0
    head = capsys.readouterr().out.strip()
    assert main(["audit", "verify", "--head", head]) == 0
    capsys.readouterr()

    def one(conn, sql, *params):
        return conn.execute(sql, params).fetchone()

    with _superuser(database_url) as conn:
        assert _replace_functions_with_no_ops(conn) >= len(PROTECTED) + 7
        conn.execute("SET session_replication_role = replica")  # every trigger off for this session
        doc = one(conn, "SELECT min(document_id) AS id FROM forum.documents")["id"]
        chunk = one(conn, "SELECT min(chunk_id) AS id FROM forum.chunks")["id"]
        vintage = one(conn, "SELECT min(vintage_id) AS id FROM forum.series_vintages")["id"]
        obs = one(conn, "SELECT min(observation_id) AS id FROM forum.series_observations WHERE value IS NOT NULL")["id"]
        forecast = one(conn, "SELECT forecast_id AS id FROM forum.forecast_bindings")["id"]
        score = one(conn, "SELECT min(score_id) AS id FROM forum.forecast_scores WHERE status = 'resolved'")["id"]
        snapshot = one(conn, "SELECT snapshot_id AS id FROM forum.briefs WHERE brief_id = %s", kept)["id"]
        section = one(conn, "SELECT min(section_id) AS id FROM forum.brief_sections WHERE brief_id = %s", kept)["id"]
        claim = one(conn, "SELECT min(claim_id) AS id FROM forum.citations WHERE brief_id = %s", kept)["id"]
        citation = one(conn, "SELECT citation_id AS id FROM forum.citations WHERE claim_id = %s", claim)["id"]
        call = one(conn, "SELECT min(call_id) AS id FROM forum.provider_calls WHERE brief_id = %s", kept)["id"]
        edits = {
            ("documents", doc): "UPDATE forum.documents SET title = 'Forged' WHERE document_id = %s",
            ("chunks", chunk): "UPDATE forum.chunks SET body = replace(body, '2024', '2025') WHERE chunk_id = %s",
            ("series_vintages", vintage): "UPDATE forum.series_vintages SET partial = NOT partial WHERE vintage_id = %s",
            ("series_observations", obs): "UPDATE forum.series_observations SET value = value + 0.1 "
                                          "WHERE observation_id = %s",
            ("forecasts", forecast): "UPDATE forum.forecasts SET probability = 0.99, ci_high = 1 WHERE forecast_id = %s",
            ("forecast_bindings", forecast): "UPDATE forum.forecast_bindings SET comparator = '<' WHERE forecast_id = %s",
            ("forecast_scores", score): "UPDATE forum.forecast_scores SET outcome = 1 - outcome, "
                                        "brier = (probability - (1 - outcome)) ^ 2 WHERE score_id = %s",
            ("evidence_snapshots", snapshot): "UPDATE forum.evidence_snapshots SET canonical = canonical || ' ', "
                                              "seal = encode(sha256(convert_to(canonical || ' ', 'UTF8')), 'hex') "
                                              "WHERE snapshot_id = %s",
            ("briefs", kept): "UPDATE forum.briefs SET question = 'Forged?' WHERE brief_id = %s",
            ("brief_sections", section): "UPDATE forum.brief_sections SET insufficient = 'hidden' WHERE section_id = %s",
            ("brief_claims", claim): "UPDATE forum.brief_claims SET text = 'Storage capacity tripled in 2024.' "
                                     "WHERE claim_id = %s",
            ("citations", citation): "UPDATE forum.citations SET quote = 'capacity doubled' WHERE citation_id = %s",
            ("provider_calls", call): "UPDATE forum.provider_calls SET latency_ms = latency_ms / 2 WHERE call_id = %s",
        }
        for (_, row_id), statement in edits.items():
            assert conn.execute(statement, (row_id,)).rowcount == 1
        # The second brief deleted with all its rows (its digests stay: they are append-only too).
        gone = {}
        for table, key in (("provider_calls", "call_id"), ("citations", "citation_id"), ("brief_claims", "claim_id"),
                           ("brief_sections", "section_id"), ("briefs", "brief_id")):
            gone[table] = [r["id"] for r in conn.execute(
                f"DELETE FROM forum.{table} WHERE brief_id = %s RETURNING {key} AS id", (deleted,))]
        gone["evidence_snapshots"] = [r["id"] for r in conn.execute(
            "DELETE FROM forum.evidence_snapshots WHERE snapshot_id NOT IN (SELECT snapshot_id FROM forum.briefs) "
            "RETURNING snapshot_id AS id")]

    with db.connection() as conn:
        report = verify_audit(conn)
    expected = {(table, row_id, "content differs from the digest recorded when it was written")
                for table, row_id in edits}
    expected |= {(table, row_id, "row is missing") for table, ids in gone.items() for row_id in ids}
    assert sum(map(len, gone.values())) >= 10
    assert _findings(report) == expected and report.chain == []

    assert main(["audit", "verify", "--head", head]) == 2
    out = capsys.readouterr().out
    assert "exported head: the chain still reaches it" in out
    for table, row_id in edits:
        assert any(line.split()[:2] == [table, str(row_id)] and "content differs" in line
                   for line in out.splitlines()), (table, row_id, out)
    # `atlas verify ID` still reads the brief and names what changed, without the stored verifiers.
    assert any("no longer match what was persisted" in p for p in verify_brief(stored_brief(db, kept)))


def test_an_event_payload_rewritten_with_its_chain_is_caught_against_the_head(db, everything, database_url):
    with db.connection() as conn:
        head = chain_head(conn)
    with _superuser(database_url) as conn:
        _replace_functions_with_no_ops(conn)
        conn.execute("SET session_replication_role = replica")
        # The attacker's no-op event_row_hash makes "recomputing the chain" trivial to fake in SQL.
        conn.execute("""UPDATE forum.events SET payload = payload || '{"forged": true}',
                               row_hash = forum.event_row_hash(prev_hash, event_id, occurred_at, kind, flow_run_id,
                                                               payload, digests)
                         WHERE event_id = 2""")
    with db.connection() as conn:
        report = verify_audit(conn, head)
    assert [(c["event_id"], c["problem"].split(" (")[0]) for c in report.chain] == [
        (2, "row_hash does not match the row content"), (3, "prev_hash does not match the preceding row")]


def test_a_digest_written_behind_the_triggers_and_anchors_rewritten_are_named(db, everything, database_url):
    """The digest table and an event's anchor rewritten to match a forged observation: the anchor no
    longer matches the chain's row_hash, and the Python anchor names the table and event."""
    with db.connection() as conn:
        head = chain_head(conn)
        event = conn.execute("SELECT event_id FROM forum.events WHERE kind = 'SERIES_VINTAGE_STORED' "
                             "ORDER BY event_id LIMIT 1").fetchone()["event_id"]
    with _superuser(database_url) as conn:
        conn.execute("SET session_replication_role = replica")
        obs = conn.execute("SELECT min(observation_id) AS id FROM forum.series_observations").fetchone()["id"]
        conn.execute("DELETE FROM forum.series_observations WHERE observation_id = %s", (obs,))
        conn.execute("DELETE FROM forum.content_digests WHERE table_name = 'series_observations' AND row_id = %s",
                     (obs,))
    with db.connection() as conn:
        report = verify_audit(conn, head)
    [finding] = report.content
    assert (finding["table_name"], finding["event_id"]) == ("series_observations", event)
    assert "are left" in finding["problem"]


def test_an_existing_database_verifies_intact_after_the_migration(empty_database_url):
    """Rows written before 120 (every new table) get digests anchored by one baseline event."""
    from forum_atlas.store import migrations

    with psycopg.connect(empty_database_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrations.apply_pending(conn, before=120)
        with conn.transaction():
            conn.execute("""INSERT INTO forum.series_vintages (series_id, label, fetched_at, connector, origin,
                                                               content_hash, row_count, first_date, last_date)
                            VALUES ('UNRATE', 'v', now(), 'file', 'x.csv', repeat('2', 64), 2, '2020-01-01', '2020-02-01')""")
            conn.execute("INSERT INTO forum.series_observations VALUES (1, '2020-01-01', 1.5), (1, '2020-02-01', NULL)")
            record_event(conn, "SERIES_VINTAGE_STORED", {"vintage_id": 1})
        assert "120_digests_of_every_record.sql" in migrations.apply_pending(conn)
        report = verify_audit(conn)
        assert report.intact, report.content
        assert report.rows_read["series_observations"] == 2 and report.content_rows == 3
        baseline = conn.execute("SELECT kind, digests FROM forum.events ORDER BY event_id DESC LIMIT 1").fetchone()
        assert baseline["kind"] == "CONTENT_DIGESTS_BASELINE"
        assert {t: v["rows"] for t, v in baseline["digests"]["tables"].items()} == {"series_observations": 2}
        conn.execute("SET session_replication_role = replica")
        conn.execute("UPDATE forum.series_observations SET value = 2.5 WHERE observation_date = '2020-01-01'")
        [finding] = verify_audit(conn).content
        assert finding["table_name"] == "series_observations" and "vintage_id 1, observation_date 2020-01-01" in \
            finding["problem"]
