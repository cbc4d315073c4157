"""`atlas ask-batch FILE` runs the deliberate-batch flow on a file of questions (plain lines or JSON objects of
the deliberate flow's parameters) and prints one row per question: its brief, or its error."""

from __future__ import annotations

import pytest

from forum_atlas.cli.main import main
from forum_atlas.store import briefs
from tests.support.corpus import ingest, record

TRIAL = "Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65."


@pytest.fixture
def corpus(prefect_env, db, database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    ingest(db, [record("trial", TRIAL, title="Vitamin D and hip fracture", sector="health")])
    return db


def test_ask_batch_prints_a_brief_per_question_and_names_the_one_that_failed(corpus, tmp_path, capsys):
    questions = tmp_path / "questions.txt"
    questions.write_text("Does vitamin D reduce hip fractures?\n\n"
                         '{"question": "Does vitamin D reduce hip fractures in adults over 65?", "top_k": 3}\n',
                         encoding="utf-8")
    status = main(["ask-batch", str(questions)])
    out, err = capsys.readouterr()
    assert status == 0, err   # the error line, should this ever fail again (seen once in ~14 runs, not reproduced)
    assert out.rstrip().endswith("2 briefs on threadpool")
    stored = briefs.list_briefs(corpus)
    assert len(stored) == 2 and all(r["audit"]["sourced_verified"] > 0 for r in stored)

    questions.write_text('Does vitamin D reduce hip fractures?\n{"question": "Is it in the stars?", '
                         '"sectors": ["astrology"]}\n', encoding="utf-8")
    assert main(["ask-batch", str(questions)]) == 1
    out, err = capsys.readouterr()
    [failed_row] = [line for line in out.splitlines() if line.startswith("Is it in the stars?")]
    assert "QueryError: unknown sector(s) 'astrology'; the corpus has: health" in failed_row
    assert err.splitlines()[-1].startswith("atlas: error: 1 of 2 questions failed") and "Is it in the stars?" in err
    assert len(briefs.list_briefs(corpus)) == 3


def test_one_dask_cluster_at_a_time(capsys):
    with pytest.raises(SystemExit):
        main(["ask-batch", "questions.txt", "--dask-workers", "2", "--dask-address", "tcp://127.0.0.1:8786"])
    assert "not allowed with argument" in capsys.readouterr().err
