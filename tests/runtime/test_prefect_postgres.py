"""Prefect's own PostgreSQL for `atlas ops up` (issue 37, 1): Debian's server with pg_trgm, or the operator's."""

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from forum_atlas.runtime import prefect_postgres


def test_the_setting_picks_the_managed_server_sqlite_or_an_operators_url():
    assert prefect_postgres.choice({}) == "managed"
    assert prefect_postgres.choice({"ATLAS_PREFECT_DATABASE_URL": "sqlite"}) == "sqlite"
    assert prefect_postgres.choice({"ATLAS_PREFECT_DATABASE_URL": "postgresql://u:p@db:5432/prefect"}) == \
        "postgresql+asyncpg://u:p@db:5432/prefect"
    with pytest.raises(ValueError, match="must be a PostgreSQL URL"):
        prefect_postgres.choice({"ATLAS_PREFECT_DATABASE_URL": "mysql://u@db/prefect"})


def test_without_a_packaged_server_the_error_says_how_to_install_one(monkeypatch, tmp_path):
    monkeypatch.setattr(prefect_postgres, "PACKAGES", tmp_path)
    with pytest.raises(RuntimeError, match=r"found none under .*: `apt-get install postgresql-15 postgresql-contrib`"):
        prefect_postgres.binaries()


@pytest.mark.skipif(not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")), reason="no packaged PostgreSQL")
def test_the_server_starts_with_pg_trgm_and_only_its_owner_reaches_it():
    folder = Path(tempfile.mkdtemp(prefix="atlas-ppg-", dir="/tmp"))   # a short path: the socket lives in it
    pgdata = folder / "prefect-pg"
    try:
        prefect_postgres.prepare(pgdata)
        prefect_postgres.prepare(pgdata)   # again: an existing data directory is kept
        assert oct(pgdata.stat().st_mode & 0o777) == "0o700", "the socket's folder admits its owner only"
        command, user = prefect_postgres.server_command(pgdata)
        assert "listen_addresses=" in command, "no TCP port"
        server = subprocess.Popen(command, user=user, group=user, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            prefect_postgres.wait_ready(pgdata, lambda: server.poll() is None, 60, folder / "log")
            with psycopg.connect(host=str(pgdata), user="prefect", dbname="prefect") as conn:
                assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'pg_trgm'").fetchone()
            assert prefect_postgres.connection_url(pgdata) == f"postgresql+asyncpg://prefect@/prefect?host={pgdata}"
        finally:
            server.send_signal(signal.SIGINT)   # as `atlas ops down` stops it: fast shutdown
            assert server.wait(timeout=60) == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)
