"""`atlas ask` prints an audited brief; `atlas brief show` reprints it (text, JSON, HTML) and
`atlas verify` recomputes its seal — both without importing Prefect — and names a tampered snapshot."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from forum_atlas.cli.main import main
from tests.support.cli import run_cli_without_prefect
from tests.support.corpus import ingest, record

TRIAL = ("Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65. "
         "The trial enrolled 3,000 participants, followed for five years.")


@pytest.fixture
def asked(prefect_env, db, database_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health"),
                record("solar", "Solar panels degrade slowly.", title="Solar", sector="energy")])
    html = tmp_path / "brief.html"
    assert main(["ask", "Does vitamin D supplementation reduce hip fracture risk?", "--html", str(html)]) == 0
    out = capsys.readouterr().out
    brief_id = int(out.split("Brief #", 1)[1].split(":", 1)[0])
    return brief_id, out, html


def test_ask_prints_the_brief_and_writes_a_page(asked):
    brief_id, out, html = asked
    assert "[SOURCED]" in out and "[INFERRED]" in out and "quality 3/5" in out and "Audit summary" in out
    assert "“Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65.”" in out
    page = html.read_text(encoding="utf-8")
    HTMLParser().feed(page)
    assert "<mark>" in page and f"atlas verify {brief_id}" in page


def test_ask_prints_no_control_characters_of_the_question(prefect_env, db, database_url, tmp_path, monkeypatch,
                                                          capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health")])
    assert main(["ask", "Does vitamin D\x1b[2J reduce hip fracture risk?\x07\x9b"]) == 0
    out = capsys.readouterr().out
    assert "Does vitamin D[2J reduce hip fracture risk?" in out
    assert not {"\x1b", "\x07", "\x9b"} & set(out)


def test_show_and_verify_run_without_prefect_and_catch_tampering(asked, database_url, tmp_path, db):
    brief_id = asked[0]
    shown = run_cli_without_prefect(database_url, tmp_path, "brief", "show", str(brief_id), "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert view["brief_id"] == brief_id and view["audit"]["sourced_verified"] >= 1
    listed = run_cli_without_prefect(database_url, tmp_path, "brief", "list")
    assert listed.returncode == 0 and "reduce hip fracture" in listed.stdout
    clean = run_cli_without_prefect(database_url, tmp_path, "verify", str(brief_id))
    assert clean.returncode == 0 and "verify" in clean.stdout, clean.stdout + clean.stderr
    # Someone with superuser rights edits one byte of the snapshot and even re-seals the row so that
    # its own CHECK holds: the seal recorded in the hash-chained audit log no longer matches.
    with db.connection() as conn:
        conn.execute("ALTER TABLE forum.evidence_snapshots DISABLE TRIGGER USER")
        conn.execute("""UPDATE forum.evidence_snapshots
                           SET canonical = replace(canonical, 'hip fractures by 20', 'hip fractures by 29'),
                               seal = encode(sha256(convert_to(
                                   replace(canonical, 'hip fractures by 20', 'hip fractures by 29'), 'UTF8')), 'hex')
                         WHERE snapshot_id = %s""", (view["snapshot_id"],))
        conn.execute("ALTER TABLE forum.evidence_snapshots ENABLE TRIGGER USER")
        conn.commit()
    tampered = run_cli_without_prefect(database_url, tmp_path, "verify", str(brief_id))
    assert tampered.returncode == 2
    assert f"snapshot {view['snapshot_id']}" in tampered.stdout and "FAIL" in tampered.stdout
    missing = run_cli_without_prefect(database_url, tmp_path, "brief", "show", "999999")
    assert missing.returncode == 1 and "no brief with id 999999" in missing.stderr


def test_ask_with_gather_runs_the_gather_first_and_names_the_retracted_source(
        prefect_env, db, database_url, tmp_path, monkeypatch, capsys):
    """`atlas ask --gather`: Crossref (replaying a real record that carries `updated-by` retraction)
    returns the retracted paper; the brief records the gather run in its sealed snapshot and says
    why the paper its retrieval would have matched is absent."""
    from forum_atlas.deliberation.verify import verify_brief
    from forum_atlas.store.briefs import load_snapshot, stored_brief
    from tests.atlas.evidence.replay import body
    from tests.support.wire import Reply, WireServer

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health")])
    retracted = json.loads(body("crossref/derived_pruned/cachewrapped_works_10.1016_s0140-6736-97-11096-0.json"))
    with WireServer() as crossref:
        crossref.always("/works", Reply(200, {"status": "ok", "message": {"items": [retracted["message"]]}}))
        assert main(["ask", "Is ileal lymphoid nodular hyperplasia linked to developmental disorder in children?",
                     "--persona", "technical", "--gather", "--gather-source", "crossref",
                     "--gather-base-url", f"crossref={crossref.url}"]) == 0
    out = capsys.readouterr().out
    brief_id = int(out.split("Brief #", 1)[1].split(":", 1)[0])
    assert "Evidence gathered first (evidence run " in out and "crossref ok(1)" in out
    withheld = out.split("Sources withheld", 1)[1].split("Audit summary", 1)[0]
    assert "doi:10.1016/s0140-6736(97)11096-0" in withheld and "Ileal-lymphoid-nodular hyperplasia" in withheld
    assert "retraction" in withheld and "10.1016/s0140-6736(10)60175-4" in withheld   # the retraction notice
    gathering = load_snapshot(db, brief_id)["evidence"]["evidence_gathering"]
    with db.connection() as conn:
        (run_id,) = [r["run_id"] for r in conn.execute("SELECT run_id FROM forum.evidence_runs")]
    assert gathering["ran"] and gathering["run_id"] == run_id and gathering["excluded"] == 1
    assert [s["source"] for s in gathering["plan"]["steps"]] == ["crossref"]
    assert [o["outcome"] for o in gathering["outcomes"]] == ["ok(1)"]
    assert crossref.url in gathering["source_versions"]["crossref"]["version"]
    assert verify_brief(stored_brief(db, brief_id)) == []
