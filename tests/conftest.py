"""Shared fixtures: one embedded PostgreSQL per test session, a fresh database per test.

Each test's database is cloned from a template that already has every migration applied, so a
test starts from the real schema in ~0.1 s and cannot see another test's rows.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# The embedded servers of the tests' data directories and the shared Prefect APIs of their Prefect homes stop
# soon after their last command (a user's wait ATLAS_IDLE_SECONDS, 300 by default, for the next one).
os.environ.setdefault("ATLAS_IDLE_SECONDS", "10")
# The default embedder is the ONNX model: tests that do not test it get the instant, deterministic
# hashed one (settings_from_env, subprocesses); a test of the default unsets this.
os.environ.setdefault("ATLAS_EMBEDDER", "hashed")

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
def fixtures_dir() -> Path:
    """tests/fixtures/documents: the HTML and DOCX fixtures and the questions about the shared papers."""
    return REPO / "tests" / "fixtures" / "documents"


@pytest.fixture(scope="session")
def pg_server_url(request) -> str:
    """URL of the session's embedded server (maintenance database `postgres`).

    Its data directory is outside pytest's numbered temp folders, which a concurrent pytest run
    may rotate away. The session's teardown stops the server (immediate mode: its data is thrown
    away, and a checkpointing stop after hundreds of cloned databases outlasts pg_ctl's wait), while
    pytest still captures output, and leaves deleting the directory to a detached process.
    """
    from forum_atlas.runtime import pgserver
    from forum_atlas.store import migrations, native

    url = os.environ.get("ATLAS_TEST_DATABASE_URL")
    if not url:
        home = Path(tempfile.mkdtemp(prefix="atlas-test-pg-"))
        remove_home = functools.partial(shutil.rmtree, home, True)
        atexit.register(remove_home)  # only if the session dies before its teardown
        url = pgserver.embedded_url(home / "pgdata", cleanup="delete")

        def discard_server() -> None:
            # Deleting hundreds of cloned databases took ~30 s of every CI run: a detached process does it.
            atexit.unregister(remove_home)
            pgserver.stop_embedded(home / "pgdata", discard=True, keep_files=True)
            subprocess.Popen([sys.executable, "-c", "import shutil, sys; shutil.rmtree(sys.argv[1], True)", str(home)],
                             start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)

        request.addfinalizer(discard_server)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    with psycopg.connect(make_conninfo(url, dbname=TEMPLATE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrations.apply_pending(conn)
        native.install_kernel(conn)  # as `atlas db install-kernel` does; test databases are cloned with it
    return url


def pytest_collection_finish(session):
    """Importing flows/ingest.py (at collection) starts great-expectations' import in a thread. pytest then
    walks the logging registry while that import is still adding loggers to it, and stops the whole session
    ("dictionary changed size during iteration"): let the import finish first."""
    from forum_atlas.ingestion.validation import WARM_UP_THREAD

    for thread in threading.enumerate():
        if thread.name == WARM_UP_THREAD:
            thread.join()


def pytest_unconfigure(config):
    """Prefect binds its console log handler (on the root logger) to sys.stderr when it configures
    logging: during a session that is pytest's capture stream, which pytest closes right after this
    hook. A record logged later, by an exit hook, would then print a "--- Logging error ---"
    traceback ("I/O operation on closed file") instead of itself; give such handlers the real stderr."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for handler in {h for lg in loggers for h in lg.handlers}:
        if type(getattr(handler, "stream", None)).__module__ == "_pytest.capture":
            handler.stream = sys.__stderr__   # not setStream: it flushes the old stream, which may be closed
            if hasattr(handler, "console"):  # PrefectConsoleHandler writes through a rich Console
                handler.console.file = sys.__stderr__


def _fresh_database(server_url: str, *, template: str = TEMPLATE) -> str:
    name = f"t_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    return make_conninfo(server_url, dbname=name)


@pytest.fixture(autouse=True)
def _close_the_pools_a_test_opened():
    """A test's databases are its own: close the pooled handles it opened (flows open them through
    `shared_database`), or a session of hundreds of tests uses up the server's 100 connection slots."""
    from forum_atlas.store import db

    before = db.shared_keys()
    yield
    db.close_shared(keep=before)


@pytest.fixture(autouse=True)
def _forget_the_llm_endpoints_a_test_served():
    """What the OpenAI client remembers per endpoint (structured-output level, slots) is about a test's own
    local server: a later test's server may get the same port."""
    yield
    from forum_atlas.chat.openai_client import forget_endpoints

    forget_endpoints()


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

    return Settings(database_url=database_url, data_dir=tmp_path, embedder="hashed")


@pytest.fixture
def db(settings):
    from forum_atlas.store.db import Database

    database = Database.open(settings)
    yield database
    database.close()


@pytest.fixture(scope="session")
def prefect_env():
    """A temporary Prefect API for the whole session (entering it costs ~14 s, so only once), started with a
    load-aware timeout and a retry (tests/support/prefect_server.py)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from tests.support.prefect_server import prefect_test_server

    with prefect_test_server(), temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield
