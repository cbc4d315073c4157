"""Connection pool and the few queries every domain shares (status, events).

`Database.open(settings)` resolves the URL (an explicit PostgreSQL URL, or the embedded server),
applies pending migrations and returns a pooled handle. Domain SQL lives in the repository modules
beside this one; they receive connections from here.
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from forum_atlas.config import Settings, settings_from_env
from forum_atlas.store import migrations, native, pgserver

MIN_PGVECTOR = (0, 5)


class DatabaseError(RuntimeError):
    """A database problem explained in words a user can act on."""


def resolve_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return pgserver.embedded_url(settings.pgdata)


_VECTOR_LOCK_KEY = 0x466F72756C  # beside the migrations' and the kernel's locks


def ensure_vector(conn: psycopg.Connection) -> str:
    """Create pgvector if it is missing and return its version. Serialised on an advisory lock:
    two first opens at once would otherwise both try to create it and one would fail on the
    catalog's unique index."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_VECTOR_LOCK_KEY,))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return row["extversion"] if isinstance(row, dict) else row[0]


def _configure(conn: psycopg.Connection) -> None:
    # Database.open created the extension before opening the pool.
    register_vector(conn)


@dataclass
class Database:
    url: str
    pool: ConnectionPool
    settings: Settings
    bm25_kernel: native.KernelStatus | None = None  # set when this handle applied migrations (native.on_open)

    @classmethod
    def open(cls, settings: Settings | None = None, *, migrate: bool = True, max_size: int = 4) -> "Database":
        settings = settings or settings_from_env()
        url = resolve_url(settings)
        with psycopg.connect(url, autocommit=True) as conn:
            version = ensure_vector(conn)
            if tuple(int(p) for p in version.split(".")[:2]) < MIN_PGVECTOR:
                raise DatabaseError(f"pgvector {version} is too old; Forum Atlas needs >= 0.5")
            kernel = None
            if migrate:
                migrations.apply_pending(conn)
                # Compiles nothing, except on the first open of an embedded database (see native.on_open).
                kernel = native.on_open(conn, enabled=settings.bm25_kernel, embedded=settings.database_url is None)
        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"row_factory": dict_row},
            configure=_configure,
            open=True,
        )
        return cls(url=url, pool=pool, settings=settings, bm25_kernel=kernel)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with self.pool.connection() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A connection whose work commits on success and rolls back entirely on any error."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def status(self) -> dict[str, Any]:
        with self.connection() as conn:
            server = conn.execute("SHOW server_version").fetchone()["server_version"]
            vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()
            level = migrations.applied(conn)
            kernel = native.describe(conn, enabled=self.settings.bm25_kernel)
            kernel_install = native.last_install(conn)
            counts = conn.execute("SELECT * FROM forum.table_counts()").fetchall()
            models = conn.execute(
                """SELECT m.name, m.engine, m.version, m.dim,
                          (SELECT count(*) FROM forum.embeddings e WHERE e.model_id = m.model_id) AS vectors,
                          to_regclass('forum.' || forum.embedding_index_name(m.model_id)) IS NOT NULL AS hnsw_index
                     FROM forum.embedding_models m ORDER BY m.model_id"""
            ).fetchall()
        return {
            "url": _redact(self.url),
            "data_dir": None if self.settings.database_url else str(self.settings.pgdata),
            "server_version": server,
            "pgvector_version": vector["extversion"],
            "migrations": [m["filename"] for m in level],
            "migration_level": level[-1]["filename"] if level else None,
            "bm25_engine": kernel.engine,
            "bm25_kernel_note": kernel.reason,
            "bm25_kernel_last_install": kernel_install,
            "counts": {row["table_name"]: row["row_count"] for row in counts},
            "embedding_models": models,
        }


def install_kernel(settings: Settings, *, force: bool = False) -> native.KernelStatus:
    """`atlas db install-kernel`: migrate, then build and install the BM25 extension (or update it,
    or remove it when ATLAS_BM25_KERNEL=off) — explicitly, not as a first open's automatic install."""
    with psycopg.connect(resolve_url(settings), autocommit=True) as conn:
        ensure_vector(conn)
        migrations.apply_pending(conn)
        return native.install_kernel(conn, enabled=settings.bm25_kernel, force=force)


_shared: dict[tuple[str | None, str], Database] = {}
_shared_lock = threading.Lock()


def shared_database(settings: Settings) -> Database:
    """One pooled handle per database and process, opened (and migrated) on first use; tasks and
    commands that run many short units of work share it."""
    key = (settings.database_url, str(settings.data_dir))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Database.open(settings)
        return _shared[key]


def shared_keys() -> set[tuple[str | None, str]]:
    """Which databases this process holds a pooled handle for."""
    with _shared_lock:
        return set(_shared)


@atexit.register
def close_shared(keep: set[tuple[str | None, str]] = frozenset()) -> None:
    """Close the pooled handles, all but `keep` (a later `shared_database` call opens a new one):
    a process that moves on from a database, such as a test session with a database per test, would
    otherwise hold its idle connections until the server has no slot left."""
    with _shared_lock:
        for key in [k for k in _shared if k not in keep]:
            _shared.pop(key).close()


def is_transient(error: object) -> bool:
    """Whether a failed database call may succeed if simply tried again (connection lost, deadlock,
    serialisation failure), as opposed to a refusal (constraint, trigger, bad input)."""
    # psycopg files deadlocks and serialisation failures under OperationalError; a cancelled
    # (timed-out) statement would only time out again.
    return isinstance(error, psycopg.OperationalError) and not isinstance(error, psycopg.errors.QueryCanceled)


def record_event(conn: psycopg.Connection, kind: str, payload: dict[str, Any], *, run_id: str | None = None) -> int:
    """Append one row to the hash-chained audit log (forum.events)."""
    row = conn.execute(
        "INSERT INTO forum.events (kind, payload, flow_run_id) VALUES (%s, %s::jsonb, %s) RETURNING event_id",
        (kind, json.dumps(payload, sort_keys=True, default=str), run_id),
    ).fetchone()
    return row["event_id"] if isinstance(row, dict) else row[0]


def verify_events(conn: psycopg.Connection) -> tuple[list[dict[str, Any]], int]:
    """(rows of the audit log whose hash no longer matches their content or predecessor, events in all)."""
    cur = conn.cursor(row_factory=dict_row)
    problems = cur.execute("SELECT * FROM forum.verify_event_chain()").fetchall()
    return problems, cur.execute("SELECT count(*) AS n FROM forum.events").fetchone()["n"]


@dataclass(frozen=True)
class ChainHead:
    """The last event of the audit log: kept outside the database, it anchors the whole chain."""

    event_id: int
    row_hash: str

    def __str__(self) -> str:
        return f"{self.event_id}:{self.row_hash}"

    @classmethod
    def parse(cls, text: str) -> "ChainHead":
        """`ID:HASH` (as `atlas audit head` prints it) or a bare `HASH` (a ChainHead with event_id 0)."""
        text = text.strip()
        ident, _, digest = text.rpartition(":")
        digest = digest.lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"not a chain head: {text!r} (expected ID:HASH or HASH, HASH being 64 hex digits)")
        if ident and not ident.isdigit():
            raise ValueError(f"not a chain head: {text!r} (the event id before ':' must be a number)")
        return cls(int(ident) if ident else 0, digest)


def chain_head(conn: psycopg.Connection) -> ChainHead | None:
    """The audit log's last event (None when the log is empty)."""
    row = conn.cursor(row_factory=dict_row).execute(
        "SELECT event_id, row_hash FROM forum.events ORDER BY event_id DESC LIMIT 1").fetchone()
    return ChainHead(row["event_id"], row["row_hash"]) if row else None


@dataclass
class AuditReport:
    """`atlas audit verify`: the hash chain, the digests of protected rows, and an exported head."""

    events: int
    chain: list[dict[str, Any]]      # event_id, problem
    content: list[dict[str, Any]]    # table_name, row_id, event_id, problem
    content_rows: int
    head: ChainHead | None = None    # the exported head checked, if any
    head_problem: str | None = None

    @property
    def intact(self) -> bool:
        return not self.chain and not self.content and self.head_problem is None


def check_head(conn: psycopg.Connection, head: ChainHead) -> str | None:
    """None when the chain still reaches the exported head, else what is wrong. The chain itself is
    verified separately: a head that is still there, on a chain that verifies, vouches for every
    event up to it."""
    cur = conn.cursor(row_factory=dict_row)
    if head.event_id:
        row = cur.execute("SELECT row_hash FROM forum.events WHERE event_id = %s", (head.event_id,)).fetchone()
        if row is None:
            last = chain_head(conn)
            return (f"event {head.event_id} of the exported head is missing (the log now ends at "
                    f"{last.event_id if last else 'nothing'}): events were deleted")
        if row["row_hash"] != head.row_hash:
            return (f"event {head.event_id} no longer has the exported head's row_hash: the chain up to it "
                    "was rewritten")
        return None
    if cur.execute("SELECT 1 FROM forum.events WHERE row_hash = %s", (head.row_hash,)).fetchone() is None:
        return "no event has the exported head's row_hash: events were deleted or the chain was rewritten"
    return None


def verify_audit(conn: psycopg.Connection, head: ChainHead | None = None) -> AuditReport:
    chain, total = verify_events(conn)
    cur = conn.cursor(row_factory=dict_row)
    content = cur.execute("SELECT * FROM forum.verify_content_digests()").fetchall()
    rows = cur.execute("SELECT count(*) AS n FROM forum.content_digests").fetchone()["n"]
    report = AuditReport(events=total, chain=chain, content=content, content_rows=rows, head=head)
    if head is not None:
        report.head_problem = check_head(conn, head)
    return report


def _redact(url: str) -> str:
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    password = creds.split(":", 1)[1] if ":" in creds else ""
    return f"{scheme}://{user}:***@{host}" if password else url
