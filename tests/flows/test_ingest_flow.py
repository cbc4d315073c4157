"""The ingest flow end to end against the real database and a real (temporary) Prefect API."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from prefect.artifacts import Artifact

from forum_atlas.flows.ingest import SourceParams, ingest
from forum_atlas.ingestion.validation import BatchValidationError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(REPO, "data", "sample", "scifact_sample.jsonl")


@pytest.fixture
def atlas_env(database_url, monkeypatch, prefect_env):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")
    return database_url


def _count(url, query):
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchone()[0]


def _snapshot(url):
    """Everything that must be equal between two runs over the same input (ids aside)."""
    with psycopg.connect(url) as conn:
        return {
            "documents": conn.execute(
                "SELECT array_agg((external_id, version, content_hash, is_current)::text ORDER BY external_id, version) FROM forum.documents").fetchone()[0],
            "chunks": conn.execute("SELECT array_agg(chunk_key ORDER BY chunk_key) FROM forum.chunks").fetchone()[0],
            "embeddings": conn.execute(
                "SELECT array_agg(c.chunk_key ORDER BY c.chunk_key) FROM forum.embeddings e JOIN forum.chunks c USING (chunk_id)").fetchone()[0],
            "orphans": conn.execute(
                """SELECT (SELECT count(*) FROM forum.documents d WHERE NOT EXISTS (SELECT 1 FROM forum.chunks c WHERE c.document_id = d.document_id))
                        + (SELECT count(*) FROM forum.chunks c WHERE NOT EXISTS (SELECT 1 FROM forum.embeddings e WHERE e.chunk_id = c.chunk_id))""").fetchone()[0],
        }


def test_ingest_sample_then_rerun_adds_nothing(atlas_env):
    first = ingest(SAMPLE, batch_size=64)
    assert (first["rows"], first["documents_added"]) == (200, 200)
    assert first["chunks_added"] == first["embeddings_added"] == _count(atlas_env, "SELECT count(*) FROM forum.chunks") > 200
    assert first["embedder"] == "hashed-bow-v1@384" and first["index_mode"] == "rebuild"
    assert _count(atlas_env, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_m%'") == 1
    again = ingest(SAMPLE, batch_size=64)
    assert (again["documents_added"], again["chunks_added"], again["status_changes"]) == (0, 0, 0)
    assert again["index_mode"] == "incremental"
    summary = Artifact.get("ingest-summary")
    assert summary is not None and "documents_added" in str(summary.data)
    assert _count(atlas_env, "SELECT count(*) FROM forum.events WHERE kind = 'INGEST_RUN_FINISHED'") == 2


def test_a_bad_row_in_a_later_batch_writes_nothing_at_all_and_names_the_row(atlas_env, tmp_path):
    """Issue 25 (5): every row is validated by check-input before the first batch; batch 1 is clean, batch 2
    holds row 18, and nothing is written (batch 1 used to be committed)."""
    lines = open(SAMPLE, encoding="utf-8").read().splitlines()[:30]
    bad = [json.loads(line) for line in lines]
    bad[17]["source"]["importance"] = 7
    bad[17]["text"] = ""
    bad[17]["published_at"] = "2020-02-31"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in bad) + "\n", encoding="utf-8")

    with pytest.raises(BatchValidationError) as caught:
        ingest(str(path), batch_size=10)
    report = caught.value.report
    assert report.failed_origins == ["bad.jsonl:18"]
    assert {f.column for f in report.failures} == {"source_importance", "text", "published_at"}
    assert str(caught.value).startswith("1 of 30 rows failed validation; nothing from this run was written:")
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 0
    assert _count(atlas_env, "SELECT count(*) FROM forum.events WHERE kind IN ('INGEST_BATCH', 'INGEST_RUN_FINISHED')") == 0
    artifact = Artifact.get("ingest-validation-failure")
    assert artifact is not None and "bad.jsonl:18" in str(artifact.data)
    runs = _settled_task_runs_of_latest_ingest("check-input")
    assert runs == {"check-input": ("FAILED", 1)}, "no batch was loaded, chunked, embedded or written"

    bad[17] = json.loads(lines[17])
    path.write_text("\n".join(json.dumps(r) for r in bad) + "\n", encoding="utf-8")
    fixed = ingest(str(path), batch_size=10)
    assert fixed["documents_added"] == 30


def test_a_bad_last_row_of_50000_writes_nothing(atlas_env, tmp_path):
    """Issue 25 (5): the 50,000-row file whose last row is bad committed 49,000 rows (131 s); the check refuses
    it before any batch. Its cost is measured by bench.input_check (BENCHMARKS.md), not asserted here."""
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for n in range(1, 50_001):
            out.write(json.dumps({"id": f"r{n}", "title": f"Row {n}", "text": f"Grid demand note number {n}.",
                                  "published_at": "2024-05-01" if n < 50_000 else "2024-13-45",
                                  "source": {"name": "Gazette", "importance": 4, "quality_score": 4,
                                             "licence": "OGL-3.0"}}) + "\n")
    with pytest.raises(BatchValidationError) as caught:
        ingest(str(path))
    assert caught.value.report.failed_origins == ["big.jsonl:50000"]
    assert caught.value.report.rows == 50_000
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 0
    assert _count(atlas_env, "SELECT count(*) FROM forum.chunks") == 0


def test_a_file_changed_after_its_check_fails_the_run_at_the_next_batch(atlas_env, tmp_path, monkeypatch):
    """What the check validated is what the batches write: a file rewritten after check-input (here: as the
    first batch is written) fails the run at the next batch it reads, which writes nothing."""
    from forum_atlas.ingestion.records import InputError
    from forum_atlas.store import documents

    rows = [json.loads(line) for line in open(SAMPLE, encoding="utf-8").read().splitlines()]   # 20 batches
    path = tmp_path / "changing.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    write = documents.write_batch

    def write_then_change_the_file(*args, **kwargs):
        result = write(*args, **kwargs)
        rows[190]["text"] = "\u0000"   # a NUL: validation would refuse it
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        return result

    monkeypatch.setattr(documents, "write_batch", write_then_change_the_file)
    with pytest.raises(InputError, match=r"changing.jsonl changed after the run checked it"):
        ingest(str(path), batch_size=10)
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") < 200


def test_a_binary_file_in_a_folder_fails_alone_and_is_stored_once_fixed(atlas_env, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Storage\n\nBatteries got cheaper.", encoding="utf-8")
    (tmp_path / "notes" / "b.txt").write_bytes(b"GIF89a\x00\x01binary")
    source = SourceParams(name="Field notes", importance=2, quality_score=3, licence="internal")
    first = ingest(str(tmp_path / "notes"), source=source)
    assert (first["documents_added"], first["files_failed"]) == (1, 1)
    assert {f["file"]: f["outcome"] for f in first["file_outcomes"]} == {"a.md": "stored", "b.txt": "unsupported"}
    assert "GIF image" in first["file_outcomes"][1]["detail"]
    (tmp_path / "notes" / "b.txt").write_text("Grid note.", encoding="utf-8")
    fixed = ingest(str(tmp_path / "notes"), source=source)
    assert (fixed["documents_added"], fixed["files_unchanged"], fixed["files_failed"]) == (1, 1, 0)


def test_a_watcher_set_by_the_caller_sees_stages_bytes_files_pages_and_chunks_embedded(atlas_env, shared_data, tmp_path):
    """The CLI's progress bar is such a watcher: set for the context the flow runs in, not a flow parameter."""
    import shutil

    from forum_atlas.ingestion.progress import ingest_watcher

    class Recorder:
        def __init__(self):
            self.calls = []

        def stage(self, name):
            self.calls.append(("stage", name))

        def start(self, total_bytes):
            self.calls.append(("start", total_bytes))

        def chunks_planned(self, count):
            self.calls.append(("planned", count))

        def chunks_embedded(self, count):
            self.calls.append(("embedded", count))

        def page(self, number):
            self.calls.append(("page", number))

        def advance(self, bytes_done, files):
            self.calls.append(("advance", bytes_done, files))

        def close(self):
            self.calls.append(("close",))

    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "a.md").write_text("# Storage\n\nBatteries got cheaper.", encoding="utf-8")
    paper = min((shared_data / "documents" / "papers").glob("*.pdf"))
    shutil.copy(paper, folder / "paper.pdf")
    total = sum(f.stat().st_size for f in folder.iterdir())
    recorder = Recorder()
    token = ingest_watcher.set(recorder)
    try:
        summary = ingest(str(folder), source=SourceParams(name="Library", importance=2, quality_score=3, licence="internal"))
    finally:
        ingest_watcher.reset(token)
    stages = [c[1] for c in recorder.calls if c[0] == "stage"]
    assert stages == ["checking the input", "reading, chunking and embedding with hashed-bow-v1@384",
                      "building the vector index", "merging the BM25 postings"]
    started = recorder.calls.index(("start", total))
    assert recorder.calls[started - 1] == ("stage", stages[1]) and recorder.calls[-1] == ("close",)
    assert sum(c[0] == "page" for c in recorder.calls) == summary["pages"] > 0
    assert [c for c in recorder.calls if c[0] == "advance"][-1] == ("advance", total, 2)
    planned = sum(c[1] for c in recorder.calls if c[0] == "planned")
    assert planned == sum(c[1] for c in recorder.calls if c[0] == "embedded") == summary["chunks_added"] > 0
    assert sum(c[0] == "embedded" for c in recorder.calls) >= 1


@pytest.mark.slow
def test_full_scifact_corpus_then_rerun_then_one_changed_document(atlas_env, shared_data, tmp_path):
    corpus = shared_data / "scifact" / "beir" / "corpus.jsonl"
    first = ingest(str(corpus), batch_size=2000)
    assert (first["rows"], first["documents_added"]) == (5183, 5183)
    chunks = _count(atlas_env, "SELECT count(*) FROM forum.chunks")
    assert first["chunks_added"] == chunks == _count(atlas_env, "SELECT count(*) FROM forum.embeddings")
    again = ingest(str(corpus), batch_size=2000)
    assert (again["documents_added"], again["chunks_added"], again["status_changes"]) == (0, 0, 0)

    edited = tmp_path / "corpus.jsonl"
    with open(corpus, encoding="utf-8") as src, open(edited, "w", encoding="utf-8") as out:
        for number, line in enumerate(src):
            if number == 100:
                row = json.loads(line)
                row["text"] += " (Erratum: sample size corrected.)"
                line = json.dumps(row) + "\n"
                changed_id = row["_id"]
            out.write(line)
    third = ingest(str(edited), format="beir", batch_size=2000)
    assert third["documents_added"] == 1
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 5184
    assert _count(atlas_env, f"SELECT max(version) FROM forum.documents WHERE external_id = '{changed_id}'") == 2


def test_kill_9_midway_then_rerun_ends_with_the_same_rows(atlas_env, pg_server_url, tmp_path, monkeypatch):
    """The reference and the re-run use other batch sizes than the killed run: the rows must not depend on them."""
    from prefect.settings import PREFECT_API_URL

    from bench.ingest import write_synthetic_jsonl
    from tests.conftest import _fresh_database

    corpus = write_synthetic_jsonl(tmp_path / "corpus.jsonl", 1500)
    reference_url = _fresh_database(pg_server_url)
    with monkeypatch.context() as reference:
        reference.setenv("ATLAS_DATABASE_URL", reference_url)
        ingest(str(corpus), batch_size=1500)

    env = {**os.environ, "ATLAS_DATABASE_URL": atlas_env, "PREFECT_API_URL": PREFECT_API_URL.value()}
    script = f"from forum_atlas.flows.ingest import ingest; ingest({str(corpus)!r}, batch_size=50)"
    victim = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _count(atlas_env, "SELECT count(*) FROM forum.events WHERE kind = 'INGEST_BATCH'") < 5:
        assert victim.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    partial = _count(atlas_env, "SELECT count(*) FROM forum.documents")
    assert 0 < partial < 1500
    assert _snapshot(atlas_env)["orphans"] == 0, "a killed run leaves no half-written batch"

    rerun = ingest(str(corpus), batch_size=400)
    assert rerun["documents_added"] == 1500 - partial
    assert _snapshot(atlas_env) == _snapshot(reference_url)


def test_reingesting_stored_content_with_a_new_embedder_embeds_it(atlas_env, monkeypatch):
    """Issue 10 (4): it used to embed nothing and report success."""
    first = ingest(SAMPLE, batch_size=64)
    monkeypatch.setenv("ATLAS_EMBED_DIM", "128")   # another embedder: hashed-bow-v1@128
    again = ingest(SAMPLE, batch_size=64)
    assert (again["documents_added"], again["chunks_added"]) == (0, 0)
    assert again["stored_chunks_embedded"] == again["embeddings_added"] == first["chunks_added"]
    assert _count(atlas_env, "SELECT sum((payload->>'stored_chunks_embedded')::int) FROM forum.events "
                             "WHERE kind = 'INGEST_BATCH'") == first["chunks_added"]
    per_model = "SELECT count(*) FROM forum.embeddings e JOIN forum.embedding_models m USING (model_id) WHERE m.name = '%s'"
    assert _count(atlas_env, per_model % "hashed-bow-v1@128") == _count(atlas_env, per_model % "hashed-bow-v1@384")
    assert ingest(SAMPLE, batch_size=64)["stored_chunks_embedded"] == 0


def test_a_write_that_fails_mid_run_is_reported_with_what_was_committed(atlas_env, tmp_path):
    """Issue 10 (4): batch 2's write fails (the database refuses row 15: a trigger this test adds, as a failure
    no check before the run can see) while batch 3 is prepared."""
    rows = [json.loads(line) for line in open(SAMPLE, encoding="utf-8").read().splitlines()[:30]]
    with psycopg.connect(atlas_env, autocommit=True) as conn:
        conn.execute("""CREATE FUNCTION pg_temp_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'refused by the test: %', NEW.external_id; END $$""")
        conn.execute("CREATE TRIGGER refuse_row_15 BEFORE INSERT ON forum.documents FOR EACH ROW "
                     f"WHEN (NEW.external_id = '{rows[14]['id']}') EXECUTE FUNCTION pg_temp_refuse()")
    path = tmp_path / "refused.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(psycopg.errors.RaiseException, match=f"refused by the test: {rows[14]['id']}") as caught:
        ingest(str(path), batch_size=10)
    [note] = caught.value.__notes__
    assert note.startswith("committed before this failure: batches 1–1 of refused.jsonl through line 10 (+10 documents")
    assert "batch 2 (lines 11–20) and everything after it wrote nothing" in note and note.endswith("resumes at batch 2.")
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 10
    runs = _settled_task_runs_of_latest_ingest("write-batch-2", "prepare-batch-3")
    assert {"load-batch-1", "write-batch-1", "load-batch-3", "write-batch-2"} <= set(runs), sorted(runs)
    assert runs["write-batch-2"] == ("FAILED", 1), "a refused write is not retried (only transient errors are)"
    assert runs["prepare-batch-3"][0] == "COMPLETED", "batch 3 was being prepared: the run lets it finish"
    assert not [name for name, (state, _) in runs.items() if state in ("PENDING", "RUNNING")], runs


def test_a_source_conflict_fails_the_run_before_any_chunking_and_leaves_no_task_running(atlas_env, shared_data,
                                                                                         tmp_path):
    """Issue 24 (6): rows that state their source differently from each other, or from the store (the sector an
    earlier sample did not state), fail the run in its check, before any batch is loaded, chunked or embedded."""
    from forum_atlas.ingestion.records import SourceConflictError

    rows = [json.loads(line) for line in open(SAMPLE, encoding="utf-8").read().splitlines()[:30]]
    rows[14]["source"]["importance"] = 1 if rows[14]["source"]["importance"] != 1 else 2
    disagreeing = tmp_path / "sources.jsonl"
    disagreeing.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(SourceConflictError, match=r"^sources.jsonl:15: source .* this input says importance"):
        ingest(str(disagreeing), batch_size=10)
    runs = _settled_task_runs_of_latest_ingest("check-input")
    assert runs == {"check-input": ("FAILED", 1)}, "nothing loaded, chunked or embedded; no task left running"
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 0

    # the earlier sample: its source stated no sector, so the store has it as "general"
    for row in rows:
        del row["source"]["sector"]
    earlier = tmp_path / "earlier_sample.jsonl"
    earlier.write_text("\n".join(json.dumps(r) for r in rows[:10]) + "\n", encoding="utf-8")
    ingest(str(earlier))
    chunks = _count(atlas_env, "SELECT count(*) FROM forum.chunks")
    with pytest.raises(SourceConflictError, match=r"sector 'biomedical' \(stored: 'general'\)"):
        ingest(_beir_subset(shared_data, tmp_path))
    runs = _settled_task_runs_of_latest_ingest("check-input")
    assert runs == {"check-input": ("FAILED", 1)}, "nothing loaded, chunked or embedded; no task left running"
    assert _count(atlas_env, "SELECT count(*) FROM forum.chunks") == chunks


def test_the_bundled_sample_and_the_shared_beir_corpus_state_one_source(atlas_env, shared_data, tmp_path):
    """Issue 24 (6): the sample's SciFact source is the BEIR corpus's, sector included: either loads after the other."""
    from forum_atlas.ingestion.records import SCIFACT_SOURCE, scan_input

    assert {name: stated for name, (_, stated) in scan_input(SAMPLE, "jsonl").sources.items()} == \
        {SCIFACT_SOURCE.name: SCIFACT_SOURCE}
    assert ingest(SAMPLE, batch_size=64)["documents_added"] == 200
    assert ingest(_beir_subset(shared_data, tmp_path))["rows"] == 40
    assert _count(atlas_env, "SELECT count(*) FROM forum.sources") == 1
    assert _count(atlas_env, "SELECT sector FROM forum.sources") == "biomedical"


def _beir_subset(shared_data, tmp_path, rows: int = 40) -> str:
    """A BEIR folder of the shared SciFact corpus's first `rows` lines."""
    beir = tmp_path / "beir"
    beir.mkdir()
    with open(shared_data / "scifact" / "beir" / "corpus.jsonl", encoding="utf-8") as corpus:
        (beir / "corpus.jsonl").write_text("".join(line for _, line in zip(range(rows), corpus)), encoding="utf-8")
    return str(beir)


def _settled_task_runs_of_latest_ingest(*names: str, within_s: float = 30.0) -> dict[str, tuple[str, int]]:
    """The API records task-run states from the client's events, a moment after they happen (longer
    under load, and in no fixed order: the run's last task may be recorded after an earlier one's
    failure): read again until every one of `names` is recorded and no task run is left RUNNING."""
    deadline = time.monotonic() + within_s
    while True:
        runs = asyncio.run(_task_runs_of_latest_ingest())
        if (set(names) <= set(runs) and all(state not in ("PENDING", "RUNNING") for state, _ in runs.values())) \
                or time.monotonic() > deadline:
            return runs
        time.sleep(0.25)


async def _task_runs_of_latest_ingest() -> dict[str, tuple[str, int]]:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import FlowRunSort

    async with get_client() as client:   # the session's API also holds other tests' runs, some never started
        [latest] = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["ingest"])),
                                               sort=FlowRunSort.START_TIME_DESC, limit=1)
        task_runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[latest.id])))
    return {t.name: (t.state_type.value, t.run_count) for t in task_runs}
