import json

import pytest

from forum_atlas.cli.main import main


def test_status_reports_versions_level_and_counts(database_url, monkeypatch, capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    assert main(["db", "status", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["server_version"].startswith("18") and info["pgvector_version"].startswith("0.8")
    assert info["migration_level"] == info["migrations"][-1] and info["counts"]["documents"] == 0
    assert main(["db", "status"]) == 0
    assert "migrations" in capsys.readouterr().out
    monkeypatch.setenv("ATLAS_BM25_KERNEL", "off")
    assert main(["db", "status"]) == 0
    assert "BM25 engine   PL/pgSQL MaxScore (disabled by ATLAS_BM25_KERNEL=off)" in capsys.readouterr().out


def test_install_kernel_is_idempotent_says_what_it_did_and_status_reports_it(database_url, monkeypatch, capsys):
    from forum_atlas.store import native

    if native._compiler() is None:
        pytest.skip("no C compiler: the kernel cannot be built here")
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    engine = f"C kernel atlas_bm25_{native.read_sources().default_version}"
    assert main(["db", "install-kernel"]) == 0  # the test template has it already
    out = capsys.readouterr().out
    assert "is installed and current: nothing to do (nothing compiled" in out and f"BM25 engine: {engine}" in out
    monkeypatch.setenv("ATLAS_BM25_KERNEL", "off")
    assert main(["db", "install-kernel"]) == 0
    out = capsys.readouterr().out
    assert "removed the BM25 kernel" in out and "dropped extension atlas_bm25" in out
    assert "BM25 engine: PL/pgSQL MaxScore" in out
    monkeypatch.delenv("ATLAS_BM25_KERNEL")
    assert main(["db", "status"]) == 0
    out = capsys.readouterr().out
    assert "BM25 engine   PL/pgSQL MaxScore (removed by ATLAS_BM25_KERNEL=off" in out
    assert "BM25 kernel   last install: removed (install-kernel," in out
    assert main(["db", "install-kernel"]) == 0
    out = capsys.readouterr().out
    assert "BM25 kernel: installed atlas_bm25" in out and "CREATE EXTENSION atlas_bm25" in out
    assert main(["db", "status"]) == 0
    out = capsys.readouterr().out
    assert f"BM25 engine   {engine}\n" in out and "BM25 kernel   last install: installed" in out


def test_install_kernel_fails_clearly_where_it_cannot_install(database_url, monkeypatch, capsys):
    from forum_atlas.store import native

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_BM25_KERNEL", "off")
    assert main(["db", "status"]) == 0  # drops the kernel the template had
    monkeypatch.delenv("ATLAS_BM25_KERNEL")
    monkeypatch.setattr(native, "_make", lambda: None)
    capsys.readouterr()
    assert main(["db", "install-kernel"]) == 1
    out = capsys.readouterr().out
    assert "BM25 kernel: not installed" in out and "no make on this machine" in out
    assert "BM25 engine: PL/pgSQL MaxScore" in out
    assert main(["db", "status"]) == 0
    assert "BM25 engine   PL/pgSQL MaxScore (no C kernel: no make on this machine" in capsys.readouterr().out


def test_audit_verify_passes_then_names_a_tampered_row(db, monkeypatch, capsys, database_url):
    from forum_atlas.store.db import record_event

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    with db.transaction() as conn:
        record_event(conn, "TEST_EVENT", {"n": 1})
        record_event(conn, "TEST_EVENT", {"n": 2})
    assert main(["audit", "verify"]) == 0
    assert "2 events, hash chain intact" in capsys.readouterr().out
    with db.connection() as conn:
        conn.execute("ALTER TABLE forum.events DISABLE TRIGGER events_append_only")
        conn.execute("UPDATE forum.events SET kind = 'FORGED' WHERE event_id = 1")
        conn.execute("ALTER TABLE forum.events ENABLE TRIGGER events_append_only")
        conn.commit()
    assert main(["audit", "verify"]) == 2
    out = capsys.readouterr().out
    assert "1 of 2 events fail verification" in out


def test_errors_are_clear_and_without_traceback(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("ATLAS_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(["db", "status"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("atlas: error: connection failed") and "Traceback" not in err
