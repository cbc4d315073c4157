import shutil

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.store import migrations
from forum_atlas.store.migrations import MigrationChecksumError, MigrationError


@pytest.fixture
def sql_copy(tmp_path):
    folder = tmp_path / "sql"
    shutil.copytree(migrations.sql_dir(), folder)
    return folder


def _connect(url):
    return psycopg.connect(url, autocommit=True, row_factory=dict_row)


def test_applies_in_order_once_and_records_checksums(empty_database_url, sql_copy):
    with _connect(empty_database_url) as conn:
        conn.execute("CREATE EXTENSION vector")
        applied = migrations.apply_pending(conn, sql_copy)
        numbered = sorted(p.name for p in (sql_copy / "migrations").glob("*.sql"))
        assert applied == numbered + [f"functions/{f.filename}" for f in migrations.discover_functions()]
        assert migrations.apply_pending(conn, sql_copy) == []
        recorded = migrations.applied(conn)
        assert [r["filename"] for r in recorded] == numbered
        assert all(len(r["checksum"]) == 64 for r in recorded)


def test_a_changed_applied_migration_is_refused(empty_database_url, sql_copy):
    with _connect(empty_database_url) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn, sql_copy)
        first = sorted((sql_copy / "migrations").glob("*.sql"))[0]
        first.write_text(first.read_text() + "\n-- edited after it was applied\n")
        with pytest.raises(MigrationChecksumError, match=f"{first.name} was applied with checksum"):
            migrations.apply_pending(conn, sql_copy)


def test_a_new_migration_is_applied_and_a_failing_one_leaves_nothing(empty_database_url, sql_copy):
    with _connect(empty_database_url) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn, sql_copy)
        (sql_copy / "migrations" / "900_extra.sql").write_text("CREATE TABLE forum.extra (x int);")
        # A migration may replace or drop what a function file defines: every file is applied again after it.
        assert migrations.apply_pending(conn, sql_copy) == ["900_extra.sql"] + [
            f"functions/{f.filename}" for f in migrations.discover_functions()]
        (sql_copy / "migrations" / "901_broken.sql").write_text("CREATE TABLE forum.half (x int); SELECT no_such_function();")
        with pytest.raises(psycopg.errors.UndefinedFunction):
            migrations.apply_pending(conn, sql_copy)
        assert conn.execute("SELECT to_regclass('forum.half') AS t").fetchone()["t"] is None
        assert "901_broken.sql" not in {r["filename"] for r in migrations.applied(conn)}


def test_badly_named_and_unknown_migrations_are_refused(empty_database_url, sql_copy):
    (sql_copy / "migrations" / "7_bad name.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="named NNN_lower_snake.sql"):
        migrations.discover(sql_copy / "migrations")
    (sql_copy / "migrations" / "7_bad name.sql").unlink()
    with _connect(empty_database_url) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn, sql_copy)
        conn.execute("INSERT INTO forum.schema_migrations (filename, checksum) VALUES ('999_from_the_future.sql', 'x')")
        with pytest.raises(MigrationError, match="does not know"):
            migrations.apply_pending(conn, sql_copy)


def test_a_missing_or_empty_migrations_folder_is_refused(tmp_path):
    with pytest.raises(MigrationError, match="does not exist: the installation is incomplete"):
        migrations.discover(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README.md").write_text("no migrations here")
    with pytest.raises(MigrationError, match="no migration .* the installation is incomplete"):
        migrations.discover(tmp_path / "empty")


def test_bm25_term_score_is_inlined_and_the_search_keeps_its_planner_settings(db):
    """014 moved the Okapi formula into a LANGUAGE sql function: it must stay inlinable (no call per
    posting), and CREATE OR REPLACE must not have dropped 012's settings of the PL/pgSQL search."""
    from tests.support.corpus import ingest, record

    ingest(db, [record("a", "insulin resistance in muscle cells"), record("b", "muscle protein synthesis"),
                record("c", "insulin signalling and protein kinase activity in muscle")])
    with db.connection() as conn, conn.transaction():
        conn.execute("SET LOCAL track_functions = 'all'")
        rows = conn.execute("SELECT * FROM forum.bm25_search_maxscore('insulin muscle protein', 5)").fetchall()
        conn.execute("SELECT forum.bm25_term_score(x, 100, 90.5, 1.5, 0.75) FROM generate_series(1, 3) x").fetchall()
        calls = conn.execute("SELECT pg_stat_get_xact_function_calls(%s::regprocedure) AS n",
                             ("forum.bm25_term_score(float8, float8, float8, float8, float8)",)).fetchone()["n"]
        search = "forum.bm25_search_maxscore(text, integer, text[], timestamptz, timestamptz, float8, float8, float8)"
        config = conn.execute("SELECT proconfig FROM pg_proc WHERE oid = %s::regprocedure",
                              (search,)).fetchone()["proconfig"]
        score = conn.execute("SELECT forum.bm25_term_score(3, 120, 100.0, 1.5, 0.75) AS s").fetchone()["s"]
    assert len(rows) == 3
    assert calls is None, "forum.bm25_term_score was called instead of inlined"
    assert sorted(config) == ["from_collapse_limit=1", "join_collapse_limit=1"]
    assert score == 3 * (1.5 + 1) / (3 + 1.5 * (1 - 0.75 + 0.75 * 120 / 100.0))
