"""Wrong input is refused before the database or Prefect starts (issue 36): the real CLI in a subprocess, with a
data directory and a Prefect home that do not exist yet; a refusal leaves both untouched. (What it costs:
`python -m bench.preflight`.)"""

import os
import subprocess
import sys

import pytest


def _atlas(tmp_path, *args, data_dir=None):
    env = {**os.environ, "ATLAS_DATA_DIR": str(data_dir or tmp_path / "data"), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("ATLAS_DATABASE_URL", None)
    env.pop("PREFECT_API_URL", None)
    run = subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], env=env, capture_output=True,
                         text=True, timeout=120)
    assert not (tmp_path / "data").exists(), "the refusal created the data directory (the database started)"
    assert not (tmp_path / "prefect").exists(), "the refusal touched the Prefect home (Prefect started)"
    return run


@pytest.mark.parametrize("what", ["missing path", "empty folder"])
def test_ingest_refuses_a_path_with_nothing_to_read(tmp_path, what):
    path = tmp_path / "library"
    if what == "empty folder":
        path.mkdir()
        (path / ".DS_Store").write_text("")
    run = _atlas(tmp_path, "ingest", str(path))
    assert run.returncode == 1
    assert run.stderr.strip() == (f"atlas: error: {path}: no such file or folder" if what == "missing path"
                                  else f"atlas: error: {path}: no files found")


def test_a_data_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "a.md").write_text("notes")
    not_a_folder = tmp_path / "datafile"
    not_a_folder.write_text("")
    run = _atlas(tmp_path, "ingest", str(tmp_path / "library"), data_dir=not_a_folder)
    assert run.returncode == 1
    assert run.stderr.startswith(f"atlas: error: the data directory {not_a_folder} is a file, not a directory: set "
                                 "ATLAS_DATA_DIR to a directory")


def test_a_stop_words_question_says_what_search_says(tmp_path):
    run = _atlas(tmp_path, "ask", "the of and")
    assert run.returncode == 1
    assert run.stderr.startswith("atlas: error: the query has no searchable words (only stop words or punctuation)")
