import json

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
