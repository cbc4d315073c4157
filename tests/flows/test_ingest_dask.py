"""Ingestion on a Dask LocalCluster of two worker processes writes row for row the database that the
single-process (thread runner) run writes (issue 13, item 7)."""

import psycopg
import pytest

from forum_atlas.flows.ingest import ingest
from forum_atlas.runtime.task_runners import DASK_MISSING, describe, task_runner, task_runner_from_env
from tests.conftest import _fresh_database

# Columns that differ between any two runs over the same input, whatever the runner: when a row was
# written, and the Prefect flow run that wrote it (each run has its own id).
RUN_COLUMNS = {"created_at", "updated_at", "ingested_at", "occurred_at", "flow_run_id"}
# The audit log's hash chain hashes each event's `occurred_at` and `flow_run_id`, and each event's `digests`
# anchor the digests of the rows its transaction wrote, a document's covering its `ingested_at`: they differ
# with those. A content digest's `xact` is the writing transaction's id, a counter of the whole server (other
# tests' databases share it): it orders digests within one database but is never the same number twice.
CHAIN_COLUMNS = {"prev_hash", "row_hash", "digests", "xact"}
# The INGEST_RUN_FINISHED payload holds the run's timings and names its runner: compared without those.
RUN_SUMMARY_KEYS = ["seconds", "chunks_per_second", "index_seconds", "bm25_compaction_seconds", "task_runner"]
COMPARED_AS = {
    ("events", "payload"): "(payload - %(keys)s::text[])::text",
    # A document's digest covers its `ingested_at`: compared as "it digests the stored row" (which is compared).
    ("content_digests", "digest"): "CASE WHEN table_name = 'documents' THEN (digest = (SELECT forum.content_digest(d) "
                                   "FROM forum.documents d WHERE d.document_id = row_id))::text ELSE digest END",
}


def _tables(conn) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'forum' AND table_type = 'BASE TABLE' "
        "ORDER BY table_name")]


def _rows(conn, table: str) -> list[tuple]:
    columns = [name for (name,) in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'forum' AND table_name = %s "
        "ORDER BY ordinal_position", (table,)) if name not in RUN_COLUMNS | CHAIN_COLUMNS]
    values = [COMPARED_AS.get((table, c), f'"{c}"::text') for c in columns]
    order = ", ".join(str(position) for position in range(1, len(values) + 1))
    rows = conn.execute(f"SELECT {', '.join(values)} FROM forum.{table} ORDER BY {order}",
                        {"keys": RUN_SUMMARY_KEYS}).fetchall()
    return [tuple(columns)] + rows


def _database(url: str) -> dict[str, list[tuple]]:
    with psycopg.connect(url) as conn:
        return {table: _rows(conn, table) for table in _tables(conn)}


@pytest.fixture
def scifact_subset(shared_data, tmp_path):
    """The first 300 SciFact abstracts: 6 batches of 50, so that each of the two workers prepares several."""
    path = tmp_path / "corpus.jsonl"
    with open(shared_data / "scifact" / "beir" / "corpus.jsonl", encoding="utf-8") as corpus:
        path.write_text("".join(line for _, line in zip(range(300), corpus)), encoding="utf-8")
    return path


def test_scifact_on_a_dask_local_cluster_writes_the_single_process_database(
        scifact_subset, pg_server_url, prefect_env, monkeypatch):
    single_url, dask_url = _fresh_database(pg_server_url), _fresh_database(pg_server_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")

    monkeypatch.setenv("ATLAS_DATABASE_URL", single_url)
    single = ingest(str(scifact_subset), format="beir", batch_size=50)
    monkeypatch.setenv("ATLAS_DATABASE_URL", dask_url)
    on_dask = ingest.with_options(task_runner=task_runner(dask_workers=2))(str(scifact_subset), format="beir",
                                                                          batch_size=50)

    assert (single["task_runner"], on_dask["task_runner"]) == ("threadpool", "dask LocalCluster 2×1")
    assert single["documents_added"] == on_dask["documents_added"] == 300
    expected, actual = _database(single_url), _database(dask_url)
    assert sum(len(rows) for rows in expected.values()) > 3 * 300   # documents, chunks, embeddings, postings, …
    for table in expected:
        assert actual[table] == expected[table], f"forum.{table} differs"


def test_the_runner_is_chosen_by_the_environment_and_a_missing_extra_says_how_to_install_it(monkeypatch):
    assert describe(task_runner_from_env({})) == "threadpool"
    assert describe(task_runner_from_env({"ATLAS_DASK_WORKERS": "3"})) == "dask LocalCluster 3×1"
    assert describe(task_runner_from_env({"ATLAS_DASK_ADDRESS": "tcp://10.0.0.5:8786"})) == "dask tcp://10.0.0.5:8786"
    with pytest.raises(ValueError, match="not both"):
        task_runner(dask_workers=2, dask_address="tcp://10.0.0.5:8786")
    monkeypatch.setitem(__import__("sys").modules, "prefect_dask", None)   # as if the extra were not installed
    with pytest.raises(ImportError) as missing:
        task_runner(dask_workers=2)
    assert str(missing.value) == DASK_MISSING and "pip install 'forum-atlas[dask]'" in DASK_MISSING
