"""Issue 13 (3, 4): provider keys come from the providers block's Secret fields or from a Secret block picked in
the run form — and a planted key reaches the provider, and nothing else: not Prefect's logs, artifacts, runs
(their parameters included) or stored block documents, not the database (the evidence snapshots included), not
an exception's text. The runs log at INFO here, as deployments and the CLI do, so the logs searched hold every line
the runs sent (a refused key's failure among them)."""

import asyncio
import json
import logging
import traceback
from pathlib import Path

import psycopg
import pytest

from forum_atlas.deliberation.model import ProviderUnreachable
from forum_atlas.resources import data_file
from tests.atlas.embeddings.remote_contract import PATH, FakeEmbeddingAPI
from tests.support.wire import Reply, WireServer

PLANTED = "sk-PLANTED-7f3a9c2e-SECRET"


def _corpus(path: Path, start: int, rows: int) -> str:
    lines = data_file("sample", "scifact_sample.jsonl").read_text(encoding="utf-8").splitlines(True)
    path.write_text("".join(lines[start:start + rows]), encoding="utf-8")
    return str(path)


@pytest.fixture
def runs_log_at_info():
    """The session's Prefect logs at WARNING (conftest); these runs log at INFO, Prefect's own default."""
    import prefect.main  # noqa: F401 — its import configures Prefect's logging: now, not after this fixture
    prefect_logger = logging.getLogger("prefect")
    level = prefect_logger.level
    prefect_logger.setLevel(logging.INFO)
    yield
    prefect_logger.setLevel(level)


async def _run_logs(flow_run_ids: list) -> list[str]:
    """The log lines of these flow runs (their task runs' included), read through the API once it has them all."""
    from prefect import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    await APILogHandler.aflush()
    async with get_client() as client:
        logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=flow_run_ids)))
    return [log.message for log in logs]


async def _prefect_records(block_name: str, block_type: str) -> list[str]:
    from prefect import get_client

    async with get_client() as client:
        found = [*await client.read_logs(), *await client.read_artifacts(), *await client.read_flow_runs(),
                 *await client.read_task_runs()]
        block = await client.read_block_document_by_name(block_name, block_type, include_secrets=False)
        return [item.model_dump_json() for item in [*found, block]]


def _prefect_database_files() -> list[str]:
    """The Prefect server's own SQLite files, raw (block secrets are stored encrypted)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url.get_secret_value()
    path = Path(url.split(":///", 1)[1])
    return [f.read_bytes().decode("latin-1") for f in path.parent.glob(path.name + "*")]


def _database_rows(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                             "WHERE table_schema = 'forum' AND table_type = 'BASE TABLE'")]
        return [row[0] for table in tables for row in conn.execute(f"SELECT t::text FROM forum.{table} t")]


def _leaks(database_url: str, block_name: str, block_type: str,
           failure: BaseException | None = None) -> dict[str, list[str]]:
    """Every place searched, with the texts in it that hold the planted key."""
    places = {
        "prefect": asyncio.run(_prefect_records(block_name, block_type)),
        "prefect files": _prefect_database_files(),
        "database": _database_rows(database_url),
    }
    if failure is not None:
        places["exception"] = [str(failure), repr(failure), "".join(traceback.format_exception(failure))]
    assert all(places.values()), "each place searched holds something"
    return {where: [text[:200] for text in texts if PLANTED in text] for where, texts in places.items()}


def test_a_planted_provider_key_reaches_the_provider_and_nowhere_else(prefect_env, database_url, monkeypatch, tmp_path,
                                                                      runs_log_at_info):
    from forum_atlas.blocks.providers import AtlasProviders
    from forum_atlas.flows.ingest import ingest

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    for variable in ("OPENAI_API_KEY", "ATLAS_EMBEDDER"):
        monkeypatch.delenv(variable, raising=False)
    AtlasProviders(embedder="openai", openai_api_key=PLANTED).save("planted", overwrite=True)
    with WireServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        srv.always(PATH, FakeEmbeddingAPI(1536))
        stored = ingest(_corpus(tmp_path / "a.jsonl", 0, 5), providers_block=AtlasProviders.load("planted"),
                        return_state=True)
        srv.always(PATH, Reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                               "code": "invalid_api_key"}}))
        # the provider refuses the key: the failure path too
        refused = ingest(_corpus(tmp_path / "b.jsonl", 5, 5), providers_block=AtlasProviders.load("planted"),
                         return_state=True)
    summary = stored.result()
    with pytest.raises(Exception) as caught:
        refused.result()
    logged = asyncio.run(_run_logs([stored.state_details.flow_run_id, refused.state_details.flow_run_id]))
    assert any(line.startswith("ingested 5 rows") for line in logged), "INFO lines reach the API"
    [cause] = [line for line in logged if line.startswith("Task run failed:")]
    assert "401" in cause or "key" in cause.lower(), cause
    assert summary["embedder"].startswith("openai/") and summary["embeddings_added"] > 0
    sent = srv.requests_to(PATH)
    assert sent and {r.headers["authorization"] for r in sent} == {f"Bearer {PLANTED}"}, "the key came from the block"

    assert _leaks(database_url, "planted", "forum-atlas-providers", caught.value) == {
        "prefect": [], "prefect files": [], "database": [], "exception": []}


CHAT = "/v1/chat/completions"


def _nothing_relevant(received) -> Reply:
    content = json.dumps({"claims": [], "insufficient_evidence": "the passages do not address it"})
    return Reply(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                                                                                     "content": content}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


def test_an_llm_key_picked_as_a_secret_block_reaches_the_model_and_nowhere_else(prefect_env, database_url,
                                                                                 monkeypatch, tmp_path):
    """The run form's `llm_key_secret` picker: the Secret block's value is the Authorization header of every
    model call, and the run's recorded parameters show it masked."""
    from prefect.blocks.system import Secret

    from forum_atlas.flows.deliberate import DeliberationParameters, deliberate
    from forum_atlas.flows.ingest import ingest

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ingest(_corpus(tmp_path / "a.jsonl", 0, 5))
    Secret(value=PLANTED).save("planted-llm-key", overwrite=True)
    with WireServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        srv.always(CHAT, _nothing_relevant)
        params = DeliberationParameters(question="Does vitamin D reduce fractures?", engine="openai",
                                        personas=["technical"], llm_key_secret=Secret.load("planted-llm-key"))
        out = deliberate(params)
        srv.always(CHAT, Reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                               "code": "invalid_api_key"}}))
        # A refused key is a failed run (issue 25: an outage is not a brief), its call logged as an event.
        with pytest.raises(ProviderUnreachable, match=r"could not be reached \(auth"):
            deliberate(params)
    sent = srv.requests_to(CHAT)
    assert out["brief_id"] and len(sent) >= 2, "a draft and the synthesis at least"
    assert {r.headers["authorization"] for r in sent} == {f"Bearer {PLANTED}"}, "the key came from the Secret block"
    with psycopg.connect(database_url) as conn:
        outcomes = [row[0] for row in conn.execute("SELECT payload->>'outcome' FROM forum.events "
                                                    "WHERE kind = 'PROVIDER_UNREACHABLE'")]
    assert outcomes == ["auth"], outcomes
    assert _leaks(database_url, "planted-llm-key", "secret") == {"prefect": [], "prefect files": [], "database": []}
