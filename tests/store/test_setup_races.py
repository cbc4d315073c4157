"""Race-free setup (issue 10, item 5): two first ingests into a brand-new database at once — opening
(extension, migrations, kernel), registering the embedder, writing, building the HNSW index — both
succeed, ten trials out of ten."""

from __future__ import annotations

import threading

from forum_atlas.config import Settings
from forum_atlas.embeddings import HashedEmbedder
from forum_atlas.store.db import Database
from forum_atlas.store.documents import ensure_embedding_index, register_embedder
from tests.conftest import _fresh_database
from tests.support.corpus import ingest, record

TRIALS = 10


def _first_ingest(url: str, tmp_path, label: str, errors: list, barrier: threading.Barrier) -> None:
    try:
        barrier.wait()
        with Database.open(Settings(database_url=url, data_dir=tmp_path)) as db:
            embedder = HashedEmbedder()
            barrier.wait()
            model = register_embedder(db, embedder.name, embedder.engine, embedder.version, embedder.dim)
            ingest(db, [record(f"{label}-{i}", f"insulin resistance study {label} {i}") for i in range(5)],
                   embedder=embedder)
            barrier.wait()
            ensure_embedding_index(db, model["model_id"])
    except Exception as exc:  # noqa: BLE001 — collected and asserted below
        errors.append(f"{label}: {type(exc).__name__}: {exc}")


def test_two_first_ingests_at_once_both_succeed(pg_server_url, tmp_path):
    failures = []
    for trial in range(TRIALS):
        url = _fresh_database(pg_server_url, template="template0")
        errors: list[str] = []
        barrier = threading.Barrier(2, timeout=60)
        threads = [threading.Thread(target=_first_ingest, args=(url, tmp_path, f"{trial}{side}", errors, barrier))
                   for side in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failures.extend(errors)
        assert errors == [], errors
        with Database.open(Settings(database_url=url, data_dir=tmp_path)) as db, db.connection() as conn:
            assert conn.execute("SELECT count(*) AS n FROM forum.documents").fetchone()["n"] == 10
            assert conn.execute("SELECT count(*) AS n FROM pg_indexes WHERE indexname LIKE 'embeddings_hnsw_m%'"
                                ).fetchone()["n"] == 1
    assert failures == []
