"""`atlas sources list|update` (issue 10): the explicit way a source's metadata changes."""

from forum_atlas.cli.main import main
from forum_atlas.config import settings_from_env
from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.ingestion.preparation import prepare
from forum_atlas.ingestion.records import Record, SourceInfo, source_conflict
from forum_atlas.store.db import Database
from forum_atlas.store.documents import write_batch


def test_list_then_update_with_a_reason(database_url, monkeypatch, capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    record = Record(external_id="1", title="Note", text="Demand rose.", source=SourceInfo("Gazette", 5, 4, "OGL-3.0"))
    with Database.open(settings_from_env({"ATLAS_DATABASE_URL": database_url})) as db:
        write_batch(db, [record], prepare([record], HashedEmbedder(dim=64)), source_conflict)
    assert main(["sources", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[:4] == ["Gazette", "5", "4", "general"]
    assert main(["sources", "update", "Gazette", "--quality", "2", "--reason", "audit found errors"]) == 0
    assert capsys.readouterr().out.splitlines()[2].split() == ["quality_score", "4", "2"]


def test_an_unknown_source_is_one_clear_line(database_url, monkeypatch, capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    assert main(["sources", "update", "Nope", "--importance", "2", "--reason", "x"]) == 1
    assert capsys.readouterr().err.strip() == "atlas: error: no source named 'Nope'"
