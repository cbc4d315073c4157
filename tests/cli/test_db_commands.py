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
    from forum_atlas.runtime import kernel_build

    if kernel_build.find_compiler() is None:
        pytest.skip("no C compiler: the kernel cannot be built here")
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    engine = f"C kernel atlas_bm25_{kernel_build.read_sources().default_version}"
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
    from forum_atlas.runtime import kernel_build

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_BM25_KERNEL", "off")
    assert main(["db", "status"]) == 0  # drops the kernel the template had
    monkeypatch.delenv("ATLAS_BM25_KERNEL")
    monkeypatch.setattr(kernel_build, "_make", lambda: None)
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


def test_audit_head_is_exported_and_verify_checks_it(db, monkeypatch, capsys, database_url):
    """AUD-5: deleting the last event verifies as intact on its own, but not against the head kept
    outside the database."""
    import psycopg

    from forum_atlas.store.db import record_event

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    assert main(["audit", "head"]) == 1
    assert "audit log is empty" in capsys.readouterr().out
    with db.transaction() as conn:
        for i in range(3):
            record_event(conn, "TEST_EVENT", {"n": i})
    assert main(["audit", "head"]) == 0
    head = capsys.readouterr().out.strip()
    event_id, row_hash = head.split(":")
    assert event_id == "3" and len(row_hash) == 64
    assert main(["audit", "head", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"event_id": 3, "row_hash": row_hash, "head": head}
    for given in (head, row_hash):
        assert main(["audit", "verify", "--head", given]) == 0
        out = capsys.readouterr().out
        assert "3 events, hash chain intact" in out and "exported head: the chain still reaches it" in out
    assert main(["audit", "verify", "--head", "3:nothex"]) == 1
    assert "not a chain head" in capsys.readouterr().out
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE forum.events DISABLE TRIGGER events_append_only")
        conn.execute("DELETE FROM forum.events WHERE event_id = 3")
        conn.execute("ALTER TABLE forum.events ENABLE TRIGGER events_append_only")
    assert main(["audit", "verify"]) == 0  # the reported attack: on its own, the chain still verifies
    capsys.readouterr()
    assert main(["audit", "verify", "--head", head]) == 2
    out = capsys.readouterr().out
    assert "exported head: event 3 of the exported head is missing (the log now ends at 2)" in out


def test_audit_verify_names_a_chunk_edited_behind_the_triggers(db, monkeypatch, capsys, database_url):
    import psycopg

    from forum_atlas.embeddings import HashedEmbedder
    from forum_atlas.ingestion.preparation import prepare
    from forum_atlas.ingestion.records import Record, SourceInfo, source_conflict
    from forum_atlas.store.documents import write_batch

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    source = SourceInfo("Gazette", 5, 4, "OGL-3.0", "https://gazette.example", "energy")
    records = [Record(external_id=str(i), title=f"T{i}", text=f"Grid demand rose by {i} percent.", source=source,
                      sector="energy") for i in range(3)]
    write_batch(db, records, prepare(records, HashedEmbedder(dim=32)), source_conflict)
    assert main(["audit", "verify"]) == 0
    assert "content digests: 6 rows of 13 tables, recomputed outside the database, match" in capsys.readouterr().out
    with psycopg.connect(database_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="keeps its content"):
            conn.execute("UPDATE forum.chunks SET body = replace(body, 'rose', 'fell') WHERE chunk_id = 2")
        conn.execute("ALTER TABLE forum.chunks DISABLE TRIGGER USER")
        conn.execute("UPDATE forum.chunks SET body = replace(body, 'rose', 'fell') WHERE chunk_id = 2")
        conn.execute("ALTER TABLE forum.chunks ENABLE TRIGGER USER")
    assert main(["audit", "verify"]) == 2
    out = capsys.readouterr().out
    assert "1 events, hash chain intact" in out  # the chain alone is fine: the digests find the edit
    assert "content digests: 1 problems" in out
    line = next(li for li in out.splitlines() if li.strip().startswith("chunks"))
    assert line.split()[:3] == ["chunks", "2", "1"] and "content differs from the digest recorded" in line


def test_errors_are_clear_and_without_traceback(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("ATLAS_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(["db", "status"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("atlas: error: connection failed") and "Traceback" not in err
