"""Shared fixtures: one embedded PostgreSQL per test session, a fresh database per test.

Each test's database is cloned from a template that already has every migration applied, so a
test starts from the real schema in ~0.1 s and cannot see another test's rows.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
TEMPLATE = "atlas_template"
_counter = itertools.count()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"evaluation data not found at {SHARED_DATA}: the checkout must sit beside ../shared")
    return SHARED_DATA


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """URL of the session's embedded server (maintenance database `postgres`).

    Its data directory is outside pytest's numbered temp folders, which a concurrent pytest run
    may rotate away; the server deletes it when the session ends.
    """
    from forum_atlas.store import migrations, native, pgserver

    url = os.environ.get("ATLAS_TEST_DATABASE_URL")
    if not url:
        home = Path(tempfile.mkdtemp(prefix="atlas-test-pg-"))
        atexit.register(shutil.rmtree, home, True)  # runs after the server's own exit hook
        url = pgserver.embedded_url(home / "pgdata", cleanup="delete")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    with psycopg.connect(make_conninfo(url, dbname=TEMPLATE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrations.apply_pending(conn)
        native.install_kernel(conn)  # as `atlas db install-kernel` does; test databases are cloned with it
    return url


def _fresh_database(server_url: str, *, template: str = TEMPLATE) -> str:
    name = f"t_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    return make_conninfo(server_url, dbname=name)


@pytest.fixture
def database_url(pg_server_url: str) -> str:
    """A new database with the full schema, private to this test."""
    return _fresh_database(pg_server_url)


@pytest.fixture
def empty_database_url(pg_server_url: str) -> str:
    """A new database with no schema at all (for migration tests)."""
    return _fresh_database(pg_server_url, template="template0")


@pytest.fixture
def settings(database_url: str, tmp_path: Path):
    from forum_atlas.config import Settings

    return Settings(database_url=database_url, data_dir=tmp_path)


@pytest.fixture
def db(settings):
    from forum_atlas.store.db import Database

    database = Database.open(settings)
    yield database
    database.close()


@pytest.fixture(scope="session")
def prefect_env():
    """A temporary Prefect API for the whole session (entering it costs ~14 s, so only once)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90), temporary_settings(
        updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}
    ):
        yield
