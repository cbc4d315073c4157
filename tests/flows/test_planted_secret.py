"""Issue 13 (3): provider keys come from the providers block's Secret fields — and a planted key reaches the
provider, and nothing else: not Prefect's logs, artifacts, runs or stored block document, not the database
(the evidence snapshots included), not an exception's text."""

import asyncio
import traceback
from pathlib import Path

import psycopg
import pytest

from forum_atlas.resources import data_file
from tests.atlas.embeddings.remote_contract import PATH, FakeEmbeddingAPI
from tests.support.wire import Reply, WireServer

PLANTED = "sk-PLANTED-7f3a9c2e-SECRET"


def _corpus(path: Path, start: int, rows: int) -> str:
    lines = data_file("sample", "scifact_sample.jsonl").read_text(encoding="utf-8").splitlines(True)
    path.write_text("".join(lines[start:start + rows]), encoding="utf-8")
    return str(path)


async def _prefect_records() -> list[str]:
    from prefect import get_client

    async with get_client() as client:
        found = [*await client.read_logs(), *await client.read_artifacts(), *await client.read_flow_runs(),
                 *await client.read_task_runs()]
        block = await client.read_block_document_by_name("planted", "forum-atlas-providers", include_secrets=False)
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


def test_a_planted_provider_key_reaches_the_provider_and_nowhere_else(prefect_env, database_url, monkeypatch, tmp_path):
    from forum_atlas.blocks.providers import AtlasProviders
    from forum_atlas.flows.ingest import ingest

    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    for variable in ("OPENAI_API_KEY", "ATLAS_EMBEDDER"):
        monkeypatch.delenv(variable, raising=False)
    AtlasProviders(embedder="openai", openai_api_key=PLANTED).save("planted", overwrite=True)
    with WireServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        srv.always(PATH, FakeEmbeddingAPI(1536))
        summary = ingest(_corpus(tmp_path / "a.jsonl", 0, 5), providers_block="planted")
        srv.always(PATH, Reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                               "code": "invalid_api_key"}}))
        with pytest.raises(Exception) as caught:   # the provider refuses the key: the failure path too
            ingest(_corpus(tmp_path / "b.jsonl", 5, 5), providers_block="planted")
    assert summary["embedder"].startswith("openai/") and summary["embeddings_added"] > 0
    sent = srv.requests_to(PATH)
    assert sent and {r.headers["authorization"] for r in sent} == {f"Bearer {PLANTED}"}, "the key came from the block"

    failure = caught.value
    places = {
        "exception": [str(failure), repr(failure), "".join(traceback.format_exception(failure))],
        "prefect": asyncio.run(_prefect_records()),
        "prefect files": _prefect_database_files(),
        "database": _database_rows(database_url),
    }
    assert all(places.values()), "each place searched holds something"
    leaks = {where: [text[:200] for text in texts if PLANTED in text] for where, texts in places.items()}
    assert leaks == {where: [] for where in places}
