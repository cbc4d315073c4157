"""sql/functions/: every SQL function's current definition, once. A database migrated before the
function files existed (by the old runner: migrations only) and one created fresh end with the same
function definitions and triggers; a fix to a function is a one-file diff that the runner re-applies;
the BM25 kernel, which the extension provides, is never replaced by a function file."""

from __future__ import annotations

import re
import shutil

import psycopg
import pytest
from psycopg.rows import dict_row

from forum_atlas.runtime import kernel_build
from forum_atlas.store import migrations, native
from tests.conftest import _fresh_database
from tests.support.corpus import ingest, record

SQL = migrations.sql_dir()
_DEFINITION = re.compile(r"^CREATE (?:OR REPLACE )?FUNCTION (forum\.\w+)\s*\(", re.MULTILINE)


def _connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True, row_factory=dict_row)


def defined_signatures(text: str) -> list[str]:
    """`forum.name(type, ...)` of each CREATE FUNCTION in `text`: input parameters' types, as written."""
    found = []
    for match in _DEFINITION.finditer(text):
        depth, start = 0, match.end() - 1
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        types = []
        for parameter in re.split(r",(?![^(]*\))", text[start + 1:end]):
            parameter = re.sub(r"\s+", " ", re.sub(r"\s+DEFAULT\s.*", "", parameter.strip(), flags=re.DOTALL))
            if parameter and not parameter.startswith("OUT "):
                types.append(parameter.split(" ", 1)[-1])
        found.append(f"{match.group(1)}({', '.join(types)})")
    return found


def canonical(conn: psycopg.Connection, signature: str) -> str | None:
    return conn.execute("SELECT to_regprocedure(%s)::text AS s", (signature,)).fetchone()["s"]


def project_functions(conn: psycopg.Connection) -> dict[str, str]:
    """pg_get_functiondef of every function in schema forum that no extension owns (the kernel's is the
    atlas_bm25 extension's, installed or not by the server's abilities)."""
    rows = conn.execute(
        """SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition
             FROM pg_proc p
            WHERE p.pronamespace = 'forum'::regnamespace
              AND NOT EXISTS (SELECT 1 FROM pg_depend d
                               WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')""").fetchall()
    return {r["signature"]: r["definition"] for r in rows}


def project_triggers(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute(
        """SELECT t.tgrelid::regclass::text || '.' || t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
             FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            WHERE c.relnamespace = 'forum'::regnamespace AND NOT t.tgisinternal""").fetchall()
    return {r["name"]: r["definition"] for r in rows}


# Function definitions edited in sql/functions/ after the split, each for the reason in its file.
CHANGED_SINCE_THE_SPLIT = {
    "forum.content_digest(forum.forecast_scores)",   # declared STABLE, what its body is, so it is inlined
    # the other overloads too (issue 25, large records): inlined, ~1/3 less CPU per chunk digested
    "forum.content_digest(forum.chunks)",
    "forum.content_digest(forum.documents)",
    "forum.content_digest(forum.series_vintages)",
    "forum.content_digest(forum.evidence_snapshots)",
    "forum.content_digest(forum.briefs)",
    "forum.content_digest(forum.brief_sections)",
    "forum.content_digest(forum.brief_claims)",
    "forum.content_digest(forum.citations)",
    "forum.content_digest(forum.provider_calls)",
    "forum.content_digest(forum.series_observations)",
    "forum.content_digest(forum.forecasts)",
    "forum.content_digest(forum.forecast_bindings)",
    "forum.insert_staged_chunks()",   # work_mem for its sort: a 10 MB record's chunks no longer spill to disk
    "forum.check_vintage_history()",   # new: migration 140 declares it for its trigger, forecasts.sql defines it
    # issue 28: the C kernel prunes too; both searches take their terms, weights and bounds from one new function
    "forum.bm25_query_weights(text,double precision,double precision,double precision,double precision)",
    "forum.bm25_search(text,integer,text[],timestamp with time zone,timestamp with time zone,double precision,"
    "double precision,double precision)",
    "forum.bm25_search_maxscore(text,integer,text[],timestamp with time zone,timestamp with time zone,"
    "double precision,double precision,double precision)",
}


def migrate_as_before_function_files(conn: psycopg.Connection) -> None:
    """What store/migrations.py did before sql/functions/ (main at 15a103b): every migration in order, each
    recorded with its checksum in forum.schema_migrations, and nothing else."""
    conn.execute("CREATE SCHEMA IF NOT EXISTS forum")
    conn.execute("""CREATE TABLE forum.schema_migrations (filename text PRIMARY KEY, checksum text NOT NULL,
                                                          applied_at timestamptz NOT NULL DEFAULT now())""")
    for migration in migrations.discover():
        with conn.transaction():
            conn.execute(migration.sql)
            conn.execute("INSERT INTO forum.schema_migrations (filename, checksum) VALUES (%s, %s)",
                         (migration.filename, migration.checksum))


def test_a_database_migrated_before_the_function_files_and_a_fresh_one_end_identical(pg_server_url):
    old_url, fresh_url = (_fresh_database(pg_server_url, template="template0") for _ in range(2))
    with _connect(old_url) as old, _connect(fresh_url) as fresh:
        for conn in (old, fresh):
            conn.execute("CREATE EXTENSION vector")
        migrate_as_before_function_files(old)
        before = project_functions(old), project_triggers(old)
        recorded = migrations.applied(old)

        applied = migrations.apply_pending(fresh)
        files = [f.filename for f in migrations.discover_functions()]
        assert applied == [m.filename for m in migrations.discover()] + [f"functions/{name}" for name in files]
        # The function files are the migrations' definitions, byte for byte as the catalog prints them, but for
        # the functions changed since the split (a function-file diff each, no migration).
        current = project_functions(fresh)
        assert {name for name in before[0].keys() | current.keys()
                if before[0].get(name) != current.get(name)} == CHANGED_SINCE_THE_SPLIT
        assert project_triggers(fresh) == before[1]

        # The old database needs no migration: its records still match; the function files apply once.
        assert migrations.apply_pending(old) == [f"functions/{name}" for name in files]
        assert migrations.applied(old) == recorded
        assert (project_functions(old), project_triggers(old)) == (project_functions(fresh), project_triggers(fresh))
        assert migrations.apply_pending(old) == [] and migrations.apply_pending(fresh) == []
        assert {r["filename"]: r["checksum"] for r in migrations.applied_functions(old)} == {
            f.filename: f.checksum for f in migrations.discover_functions()}
        assert len(before[0]) > 60 and len(before[1]) > 50


def test_each_function_has_one_current_definition_in_one_function_file(database_url):
    """The migrations keep their historical text (applied migrations are immutable); the current definition
    of every function they define that still exists is in exactly one function file, and the function
    files define exactly the project's functions."""
    with _connect(database_url) as conn:
        in_files: dict[str, list[str]] = {}
        for function_file in migrations.discover_functions():
            for signature in defined_signatures(function_file.sql):
                name = canonical(conn, signature)
                assert name is not None, f"{function_file.filename} defines {signature}, which the database lacks"
                in_files.setdefault(name, []).append(function_file.filename)
        twice = {name: where for name, where in in_files.items() if len(where) > 1}
        assert not twice, f"defined more than once in sql/functions/: {twice}"
        assert set(in_files) == set(project_functions(conn))
        for migration in migrations.discover():
            for signature in defined_signatures(migration.sql):
                name = canonical(conn, signature)
                assert name is None or name in in_files, f"{migration.filename}: {name} has no function file"


def test_function_files_call_only_functions_of_their_own_or_earlier_files():
    """ORDER is a dependency order: on a database that lacks a function, a file calling it would fail
    (a LANGUAGE sql body is checked when it is created)."""
    files = migrations.discover_functions()
    defined_in = {signature.split("(")[0]: index for index, f in enumerate(files)
                  for signature in defined_signatures(f.sql)}
    later = [(f.filename, name) for index, f in enumerate(files)
             for name in sorted(set(re.findall(r"forum\.\w+(?=\()", f.sql))) if defined_in.get(name, -1) > index]
    assert later == []


def test_function_files_must_all_be_listed_in_order(tmp_path):
    folder = tmp_path / "functions"
    shutil.copytree(SQL / "functions", folder)
    (folder / "extra.sql").write_text("SELECT 1;\n")
    with pytest.raises(migrations.MigrationError, match=r"\['extra.sql'\] .* not listed in ORDER"):
        migrations.discover_functions(folder)
    (folder / "extra.sql").unlink()
    (folder / "bm25.sql").unlink()
    with pytest.raises(migrations.MigrationError, match=r"ORDER lists \['bm25.sql'\]"):
        migrations.discover_functions(folder)


def test_a_fix_to_a_function_is_one_file_reapplied_and_recorded(database_url, tmp_path):
    schema = tmp_path / "sql"
    shutil.copytree(SQL, schema, ignore=shutil.ignore_patterns("__pycache__", "native"))
    fixed = schema / "functions" / "foundation.sql"
    body = "BEGIN\n  RAISE EXCEPTION 'forum.% is append-only"
    assert fixed.read_text().count(body) == 1
    with _connect(database_url) as conn:
        assert migrations.apply_pending(conn, schema) == []  # the template's checksums: nothing changed yet
        before = {r["filename"]: r for r in migrations.applied_functions(conn)}
        functions_before = project_functions(conn)

        fixed.write_text(fixed.read_text().replace(body, "BEGIN\n  -- a fix, applied\n  RAISE EXCEPTION 'forum.% is append-only"))
        assert migrations.apply_pending(conn, schema) == ["functions/foundation.sql"]
        after = {r["filename"]: r for r in migrations.applied_functions(conn)}
        assert after["foundation.sql"]["checksum"] == migrations.FunctionFile("", fixed.read_text()).checksum
        assert {n: r for n, r in after.items() if n != "foundation.sql"} == {
            n: r for n, r in before.items() if n != "foundation.sql"}  # unchanged files were not re-applied
        changed = {s for s, d in project_functions(conn).items() if functions_before[s] != d}
        assert changed == {"forum.refuse_mutation()"}
        assert "-- a fix, applied" in project_functions(conn)["forum.refuse_mutation()"]
        assert migrations.apply_pending(conn, schema) == []
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
            conn.execute("TRUNCATE forum.events")  # the fixed function still guards


def test_the_template_records_each_function_file_it_applied(database_url):
    with _connect(database_url) as conn:
        assert [r["filename"] for r in migrations.applied_functions(conn)] == sorted(
            f.filename for f in migrations.discover_functions())
        assert migrations.apply_pending(conn) == []


@pytest.mark.skipif(kernel_build.find_compiler() is None, reason="no C compiler: the kernel cannot be built here")
@pytest.mark.parametrize("kernel", [True, False], ids=["kernel-on", "kernel-off"])
def test_reapplying_the_function_files_keeps_the_engine_that_serves_bm25(database_url, tmp_path, kernel):
    """forum.bm25_search asks forum.bm25_engine() which engine serves; the kernel function belongs to the
    atlas_bm25 extension and is in no function file, so re-applying every file keeps it, or its absence."""
    from forum_atlas.config import Settings
    from forum_atlas.store.db import Database

    with Database.open(Settings(database_url=database_url, data_dir=tmp_path, embedder="hashed")) as db:
        ingest(db, [record(str(i), f"insulin resistance {'muscle ' * (i % 3)}cells {i} protein") for i in range(30)])
    with _connect(database_url) as conn:
        status = native.install_kernel(conn, enabled=kernel)
        assert status.native is kernel
        engine = native.engine(conn)
        ranking = conn.execute("SELECT * FROM forum.bm25_search('insulin muscle protein', 10)").fetchall()
        conn.execute("DELETE FROM forum.schema_functions")  # as after an edit of every file
        assert len(migrations.apply_pending(conn)) == len(migrations.discover_functions())
        assert native.engine(conn) == engine
        assert conn.execute("SELECT * FROM forum.bm25_search('insulin muscle protein', 10)").fetchall() == ranking
        member = conn.execute(
            """SELECT e.extname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                WHERE d.classid = 'pg_proc'::regclass AND d.objid = to_regprocedure(%s) AND d.deptype = 'e'""",
            (native.SIGNATURE,)).fetchone()
        assert (member["extname"] if member else None) == ("atlas_bm25" if kernel else None)
