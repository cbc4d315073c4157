"""The native BM25 kernel (sql/native/bm25_top_k.c): built against the running server, installed
into its library directory, and checked before use.

`forum.bm25_search` (sql/011) calls the kernel when `forum.bm25_native_top_k` exists, and the
PL/pgSQL MaxScore search otherwise; both return the same rows. Installing needs what only a local
server offers: superuser rights, the server's headers and library directory on this machine, and a
C compiler (`$CC`, else `cc`). Where any is missing the kernel is simply not installed, and
`forum.bm25_engine()` / `atlas db status` say which engine serves BM25 and why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.rows import tuple_row

from forum_atlas.resources import sql_folder

log = logging.getLogger(__name__)

SOURCE = sql_folder() / "native" / "bm25_top_k.c"
SIGNATURE = ("forum.bm25_native_top_k(text[], double precision[], integer, double precision, "
             "double precision, double precision, bigint[])")
_LOCK_KEY = 0x466F72756E  # next to the migrations' lock ("Forum" + 1)


@dataclass(frozen=True)
class KernelStatus:
    engine: str          # forum.bm25_engine(): "C kernel <library>" or "PL/pgSQL MaxScore"
    reason: str = ""     # why the kernel is not installed, when it is not


class KernelBuildError(RuntimeError):
    """The compiler refused the kernel; the message carries its output."""


def _compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def _rows(conn: psycopg.Connection, query: str) -> list[tuple]:
    """Plain tuples whatever the connection's row factory (pooled connections return dicts)."""
    return conn.cursor(row_factory=tuple_row).execute(query).fetchall()


def _server_config(conn: psycopg.Connection) -> dict[str, str]:
    return dict(_rows(conn, "SELECT name, setting FROM pg_config "
                            "WHERE name IN ('INCLUDEDIR-SERVER', 'PKGLIBDIR', 'VERSION')"))


def _unusable_reason(conn: psycopg.Connection) -> tuple[str, dict[str, str]]:
    """Why the kernel cannot be built for this server ("" if it can), and the server's build paths."""
    superuser = _rows(conn, "SELECT current_setting('is_superuser')")[0][0] == "on"
    if not superuser:
        return "the database role is not a superuser (C functions need one)", {}
    config = _server_config(conn)
    include, libdir = Path(config["INCLUDEDIR-SERVER"]), Path(config["PKGLIBDIR"])
    if not (include / "postgres.h").is_file():
        return f"the server's headers are not on this machine ({include})", config
    if not (libdir.is_dir() and os.access(libdir, os.W_OK)):
        return f"the server's library directory is not writable here ({libdir})", config
    if _compiler() is None:
        return "no C compiler (set CC, or install cc)", config
    return "", config


def library_name(config: dict[str, str], compiler: str) -> str:
    """A name that changes with the source, the server version and the compiler."""
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), config["VERSION"].encode(), config["INCLUDEDIR-SERVER"].encode(),
                 compiler.encode()):
        digest.update(part)
    return f"atlas_bm25_{digest.hexdigest()[:16]}"


def build(config: dict[str, str], compiler: str, name: str) -> Path:
    """Compile the kernel into the server's library directory (atomically: concurrent builders race
    harmlessly) unless that exact build is already there."""
    target = Path(config["PKGLIBDIR"]) / f"{name}.so"
    if target.is_file():
        return target
    link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".atlas-build-") as tmp:
        output = Path(tmp) / target.name
        # -ffp-contract=off: no fused multiply-add, so scores round exactly as rank_bm25's do.
        command = [compiler, "-O2", "-fPIC", "-ffp-contract=off", *link, "-I", config["INCLUDEDIR-SERVER"],
                   "-o", str(output), str(SOURCE)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise KernelBuildError(f"{' '.join(command)} failed:\n{done.stderr.strip()}")
        output.chmod(0o755)  # the server may run as another user
        os.replace(output, target)
    return target


def _drop(conn: psycopg.Connection) -> None:
    conn.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")


def _works(conn: psycopg.Connection) -> bool:
    """Whether the installed kernel loads and answers (its library may be gone or foreign)."""
    try:
        with conn.transaction():
            conn.execute("SELECT count(*) FROM forum.bm25_native_top_k('{}', '{}', 1, 1.5, 0.75, 1, NULL)")
        return True
    except psycopg.Error as exc:
        log.warning("the installed BM25 kernel does not load (%s); rebuilding or falling back", exc)
        return False


def engine(conn: psycopg.Connection) -> str:
    return _rows(conn, "SELECT forum.bm25_engine()")[0][0]


def ensure_bm25_kernel(conn: psycopg.Connection, *, enabled: bool = True) -> KernelStatus:
    """Install (or keep) the native kernel when this server allows it; drop it when disabled or
    broken. Serialised on an advisory lock: several processes open the database at once."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if not enabled:
            _drop(conn)
            return KernelStatus(engine(conn), "disabled by ATLAS_BM25_KERNEL=off")
        reason, config = _unusable_reason(conn)
        installed = engine(conn)
        if reason:
            # Another machine's process may have installed a kernel this one cannot see: keep it if it works.
            if installed.startswith("C kernel") and not _works(conn):
                _drop(conn)
            return KernelStatus(engine(conn), reason)
        compiler = _compiler()
        name = library_name(config, compiler)
        if installed == f"C kernel {name}" and _works(conn):
            return KernelStatus(installed)
        try:
            build(config, compiler, name)
        except (KernelBuildError, OSError) as exc:
            log.warning("BM25 kernel not built, the PL/pgSQL search serves BM25: %s", exc)
            _drop(conn)
            return KernelStatus(engine(conn), f"build failed: {exc}")
        try:
            with conn.transaction():
                conn.execute(f"""CREATE OR REPLACE FUNCTION {SIGNATURE}
                                 RETURNS TABLE (chunk_id bigint, score double precision)
                                 AS '$libdir/{name}', 'atlas_bm25_top_k' LANGUAGE C STABLE PARALLEL SAFE""")
        except psycopg.Error as exc:  # e.g. the "local" library directory belongs to another machine's server
            log.warning("BM25 kernel not installed, the PL/pgSQL search serves BM25: %s", exc)
            _drop(conn)
            return KernelStatus(engine(conn), f"the server could not load $libdir/{name}: {exc}")
        return KernelStatus(engine(conn))
