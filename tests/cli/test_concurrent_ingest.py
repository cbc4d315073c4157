"""Issue 10 (5): two `atlas ingest` processes of the same corpus into a brand-new database at once both
exit 0 and store it once. Each trial costs ~50 s on a loaded 2-core machine (two processes, each importing
Prefect and migrating the new database), so CI runs 3 trials; ATLAS_CONCURRENT_INGEST_TRIALS=10 gave 10/10
(504 s). tests/store/test_setup_races.py runs the same race at store level ten times in every run."""

import os
import subprocess
import sys

import psycopg

from forum_atlas.resources import data_file
from tests.conftest import _fresh_database

TRIALS = int(os.environ.get("ATLAS_CONCURRENT_INGEST_TRIALS", "3"))


def test_two_cli_ingests_of_the_same_corpus_at_once_both_exit_0(pg_server_url, prefect_env, tmp_path):
    from prefect.settings import PREFECT_API_URL

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(data_file("sample", "scifact_sample.jsonl").read_text(encoding="utf-8").splitlines(True)[:30]),
                      encoding="utf-8")
    outcomes = []
    for _ in range(TRIALS):
        url = _fresh_database(pg_server_url, template="template0")   # no extension, no schema yet
        env = {**os.environ, "ATLAS_DATABASE_URL": url, "ATLAS_EMBEDDER": "hashed", "PREFECT_API_URL": PREFECT_API_URL.value()}
        runs = [subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ingest", str(corpus), "--batch-size", "10",
                                  "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                for _ in range(2)]
        outcomes.append([(run.wait(timeout=300), run.stderr.read().decode()[-500:]) for run in runs])
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*), count(DISTINCT external_id) FROM forum.documents").fetchone() == (30, 30)
    assert [[code for code, _ in trial] for trial in outcomes] == [[0, 0]] * TRIALS, outcomes
