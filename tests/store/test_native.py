"""store/native.py: the native BM25 kernel is built, installed, checked, and replaced by the
PL/pgSQL search whenever it cannot serve — with the same rows either way."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from forum_atlas.store import native
from tests.support.corpus import ingest, record

pytestmark = pytest.mark.skipif(native._compiler() is None, reason="no C compiler: the kernel cannot be built here")

PLPGSQL = "PL/pgSQL MaxScore"


def ranking(conn, text: str, k: int = 10) -> list[tuple[int, float]]:
    return [(r["chunk_id"], r["score"]) for r in conn.execute("SELECT * FROM forum.bm25_search(%s, %s)", (text, k))]


@pytest.fixture
def corpus(db):
    ingest(db, [record(str(i), f"insulin {'resistance ' * (i % 3)}muscle cells {i} exercise" + " protein" * (i % 4))
                for i in range(40)])
    return db


def test_the_kernel_is_installed_and_reported(corpus):
    assert corpus.bm25_kernel.engine.startswith("C kernel atlas_bm25_") and corpus.bm25_kernel.reason == ""
    with corpus.connection() as conn:
        libdir = Path(conn.execute("SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'").fetchone()["setting"])
        name = native.engine(conn).removeprefix("C kernel ")
        assert (libdir / f"{name}.so").is_file()
        assert corpus.status()["bm25_engine"] == native.engine(conn)


def test_disabling_falls_back_to_the_same_rows_and_enabling_restores_the_kernel(corpus):
    with corpus.connection() as conn:
        with_kernel = ranking(conn, "insulin resistance protein", 20)
        assert native.ensure_bm25_kernel(conn, enabled=False) == native.KernelStatus(
            PLPGSQL, "disabled by ATLAS_BM25_KERNEL=off")
        fallback = ranking(conn, "insulin resistance protein", 20)
        assert [r[0] for r in fallback] == [r[0] for r in with_kernel]
        assert [r[1] for r in fallback] == pytest.approx([r[1] for r in with_kernel], rel=1e-12)
        assert native.ensure_bm25_kernel(conn).engine.startswith("C kernel")
        assert ranking(conn, "insulin resistance protein", 20) == with_kernel


def test_a_failing_compiler_leaves_the_plpgsql_search_and_says_why(corpus, monkeypatch, tmp_path):
    failing = tmp_path / "cc"
    failing.write_text("#!/bin/sh\necho 'bm25_top_k.c:1: error: simulated' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    with corpus.connection() as conn:
        expected = ranking(conn, "muscle exercise")
        status = native.ensure_bm25_kernel(conn)
        assert status.engine == PLPGSQL
        assert "build failed" in status.reason and "simulated" in status.reason
        assert [r[0] for r in ranking(conn, "muscle exercise")] == [r[0] for r in expected]


def test_a_vanished_library_is_served_by_plpgsql_until_it_is_rebuilt(corpus):
    with corpus.connection() as conn:
        expected = ranking(conn, "insulin cells protein")
        libdir = Path(conn.execute("SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'").fetchone()["setting"])
        installed = libdir / f"{native.engine(conn).removeprefix('C kernel ')}.so"
        doomed = libdir / "atlas_bm25_test_vanishing.so"
        shutil.copy(installed, doomed)
        conn.execute(f"""CREATE OR REPLACE FUNCTION {native.SIGNATURE}
                         RETURNS TABLE (chunk_id bigint, score double precision)
                         AS '$libdir/atlas_bm25_test_vanishing', 'atlas_bm25_top_k' LANGUAGE C STABLE""")
        conn.commit()
        doomed.unlink()
    # A new backend cannot load the library: the search still answers, through PL/pgSQL.
    with psycopg.connect(corpus.url, row_factory=psycopg.rows.dict_row) as conn:
        assert native.engine(conn) == "C kernel atlas_bm25_test_vanishing"
        assert [r[0] for r in ranking(conn, "insulin cells protein")] == [r[0] for r in expected]
        status = native.ensure_bm25_kernel(conn)
        assert status.engine == f"C kernel {installed.stem}" and status.reason == ""
        assert ranking(conn, "insulin cells protein") == expected


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
        with psycopg.connect(make_conninfo(**params), row_factory=psycopg.rows.dict_row) as conn:
            status = native.ensure_bm25_kernel(conn)
            assert status.engine.startswith("C kernel") and "not a superuser" in status.reason
            assert ranking(conn, "insulin") == expected
    finally:
        with corpus.connection() as conn:
            conn.execute("DROP OWNED BY atlas_reader")
            conn.execute("DROP ROLE atlas_reader")


def test_concurrent_installers_agree(corpus):
    with corpus.connection() as conn:
        native.ensure_bm25_kernel(conn, enabled=False)
        conn.commit()
    results, errors = [], []

    def install() -> None:
        try:
            with psycopg.connect(corpus.url, autocommit=True) as conn:
                results.append(native.ensure_bm25_kernel(conn))
        except Exception as exc:  # noqa: BLE001 — collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=install) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len({r.engine for r in results}) == 1 and results[0].engine.startswith("C kernel")


def test_the_library_name_follows_source_server_and_compiler():
    config = {"VERSION": "PostgreSQL 18.4", "INCLUDEDIR-SERVER": "/x/include/server"}
    base = native.library_name(config, "cc")
    assert base.startswith("atlas_bm25_") and base == native.library_name(config, "cc")
    assert native.library_name(config, "clang") != base
    assert native.library_name(config | {"VERSION": "PostgreSQL 18.5"}, "cc") != base
