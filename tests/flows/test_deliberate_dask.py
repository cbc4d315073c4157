"""Batches of deliberations on a Dask LocalCluster of two worker processes write the briefs that the thread
runner writes, every one sealed and verifiable; a question that fails in a worker loses none of the others
(issue 13, item 7)."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.config import Settings
from forum_atlas.deliberation.verify import verify_brief
from forum_atlas.flows.deliberate import DeliberationParameters
from forum_atlas.flows.deliberate_batch import deliberate_batch
from forum_atlas.runtime import pgserver
from forum_atlas.runtime.task_runners import task_runner
from forum_atlas.store import briefs
from forum_atlas.store.db import Database, close_shared, shared_keys
from forum_atlas.tasks.deliberate_batch import database_for_workers
from tests.conftest import _fresh_database
from tests.support.corpus import ingest, scifact_records

QUESTIONS = ["Do neutrophils support lung colonization by metastatic breast cancer cells?",
             "Does mTOR signaling mediate epileptogenesis in temporal lobe epilepsy?",
             "Do mast cells promote diet-induced obesity and diabetes?",
             "Which NT5C2 mutations are specific to relapse of childhood acute lymphoblastic leukemia?"]
# What differs between two runs of the same question: which row and run it is, when it was written, and the
# seal, which covers those.
RUN_FIELDS = {"brief_id", "snapshot_id", "created_at", "seal", "flow_run_id", "citation_id"}


@pytest.fixture(scope="module")
def corpus_url(pg_server_url, shared_data) -> str:
    """One database for the module with the first 200 SciFact abstracts; each run adds its own briefs."""
    url = _fresh_database(pg_server_url)
    with Database.open(Settings(database_url=url, embedder="hashed")) as db:
        ingest(db, scifact_records(shared_data, 200))
    return url


@pytest.fixture
def corpus(corpus_url):
    with Database.open(Settings(database_url=corpus_url), migrate=False) as db:
        yield db


def _content(value):
    """The brief as its reader sees it, without what identifies the run."""
    if isinstance(value, dict):
        return {k: _content(v) for k, v in value.items() if k not in RUN_FIELDS}
    if isinstance(value, list | tuple):
        return [_content(v) for v in value]
    return value


def _batch(questions: list[DeliberationParameters], corpus_url: str, *, dask_workers: int | None = None, **options):
    batch = deliberate_batch.with_options(task_runner=task_runner(dask_workers)) if dask_workers else deliberate_batch
    return batch(questions, database_block=AtlasDatabase(url=corpus_url), **options)


def test_a_batch_on_a_dask_local_cluster_writes_the_briefs_the_thread_runner_writes(
        prefect_env, corpus_url, corpus):
    questions = [DeliberationParameters(question=q) for q in QUESTIONS]
    on_threads = _batch(questions, corpus_url)
    on_dask = _batch(questions, corpus_url, dask_workers=2)

    assert (on_threads["task_runner"], on_dask["task_runner"]) == ("threadpool", "dask LocalCluster 2×1")
    assert len(set(on_threads["briefs"] + on_dask["briefs"])) == 2 * len(QUESTIONS)   # every brief persisted
    for question, single, dask in zip(QUESTIONS, on_threads["briefs"], on_dask["briefs"]):
        expected, actual = briefs.load_brief(corpus, single), briefs.load_brief(corpus, dask)
        assert expected.question == actual.question == question
        assert _content(asdict(actual)) == _content(asdict(expected)), question
        assert verify_brief(briefs.stored_brief(corpus, dask)) == [] and verify_brief(briefs.stored_brief(corpus, single)) == []
        assert actual.seal != expected.seal and actual.flow_run_id != expected.flow_run_id
    assert sum(row["sourced_verified"] for row in on_dask["results"]) > 0   # the briefs cite the corpus


def test_a_question_that_fails_in_a_worker_loses_none_of_the_others(prefect_env, embedded_home):
    """On the embedded server, which the flow's process starts and the workers join by its URL. The failure is
    an unknown sector: retrieval, in the worker, checks it against the corpus and refuses the question."""
    failing = DeliberationParameters(question="Does vitamin D prevent fractures in horoscopes?", sectors=["astrology"])
    questions = [DeliberationParameters(question=QUESTIONS[0]), failing, DeliberationParameters(question=QUESTIONS[1])]
    state = deliberate_batch.with_options(task_runner=task_runner(dask_workers=2))(
        questions, database_block=AtlasDatabase(data_dir=str(embedded_home)), return_state=True)

    assert state.is_failed()
    assert "1 of 3 questions failed" in state.message and failing.question in state.message
    table = _artifact_table(state.state_details.flow_run_id)
    assert [row["question"] for row in table] == [q.question for q in questions]
    assert [bool(row["brief"]) for row in table] == [True, False, True]
    assert table[1]["error"].startswith("QueryError: unknown sector(s) 'astrology'; the corpus has:")
    with Database.open(Settings(data_dir=embedded_home), migrate=False) as db:
        for row in (table[0], table[2]):
            assert briefs.load_brief(db, row["brief"]).question == row["question"]   # an empty corpus: insufficient
            assert verify_brief(briefs.stored_brief(db, row["brief"])) == []
    # The workers were handed the server's URL (settings without one would have each worker start or join a
    # server of its own, which on another machine is another, empty database).
    assert any(name.startswith("database-for-workers") for name in _task_run_names(state.state_details.flow_run_id))
    resolved = database_for_workers.fn(Settings(data_dir=embedded_home))
    assert resolved.database_url and f"host={embedded_home.resolve() / 'pgdata'}" in resolved.database_url
    assert database_for_workers.fn(resolved) == resolved


@pytest.fixture
def embedded_home():
    """A data directory for an embedded server of the test's own (outside pytest's rotated temp folders)."""
    home = Path(tempfile.mkdtemp(prefix="atlas-test-batch-"))
    yield home
    close_shared(keep={k for k in shared_keys() if k[1] != str(home)})
    pgserver.stop_embedded(home / "pgdata", discard=True)
    shutil.rmtree(home, ignore_errors=True)


def _task_run_names(flow_run_id) -> set[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {run.name for run in runs}


def _artifact_table(flow_run_id) -> list[dict]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        [artifact] = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["deliberate-batch"]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
