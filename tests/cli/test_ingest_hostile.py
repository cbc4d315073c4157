"""`atlas ingest` of a folder with hostile files in it: each fails alone, with its outcome, and the rest is stored."""

import re
import shutil

import psycopg
import pytest

from forum_atlas.cli.commands.ingest import SOME_FILES_FAILED
from forum_atlas.cli.main import main
from tests.support.hostile_files import deep_html, docx_bomb, one_line_html

SOURCE = ["--source-name", "Library", "--importance", "4", "--quality", "4", "--licence", "CC-BY-4.0", "--no-progress"]
EXPECTED = {"report.docx": "stored", "article.html": "stored", "deep.html": "stored", "two\\nlines.md": "stored",
            "bomb.docx": "suspicious", "gigabyte-bomb.docx": "too_large", "one-line.html": "too_large",
            "dangling.md": "skipped"}


@pytest.fixture
def atlas_env(database_url, monkeypatch, prefect_env):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")
    return database_url


def test_bombs_deep_pages_and_odd_names_fail_alone_and_the_rest_is_stored(atlas_env, tmp_path, fixtures_dir, capsys):
    folder = tmp_path / "library"
    folder.mkdir()
    shutil.copy(fixtures_dir / "report.docx", folder / "report.docx")
    shutil.copy(fixtures_dir / "article.html", folder / "article.html")
    docx_bomb(folder / "bomb.docx", 5 * 1024 * 1024)
    docx_bomb(folder / "gigabyte-bomb.docx", 1_200_000_000)
    deep_html(folder / "deep.html", 100_000)
    one_line_html(folder / "one-line.html", 50 * 1024 * 1024)
    (folder / "two\nlines.md").write_text("# Two lines\n\nA name with a line break.", encoding="utf-8")
    (folder / "dangling.md").symlink_to(folder / "gone.md")

    rc = main(["ingest", str(folder), *SOURCE])
    out = capsys.readouterr().out
    assert rc == SOME_FILES_FAILED
    outcomes = {}
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=2)
        if parts[0] in EXPECTED:
            outcomes[parts[0]] = parts[1]
    assert outcomes == EXPECTED
    with psycopg.connect(atlas_env) as conn:
        titles = {row[0] for row in conn.execute("SELECT title FROM forum.documents")}
    assert len(titles) == 4 and {"Deep page", "Two lines"} <= titles
