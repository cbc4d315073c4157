"""Connection pool and the few queries every domain shares (status, events).

`Database.open(settings)` resolves the URL (an explicit PostgreSQL URL, or the embedded server),
applies pending migrations and returns a pooled handle. Domain SQL lives in the repository modules
beside this one; they receive connections from here.
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool

from forum_atlas.config import Settings, settings_from_env
from forum_atlas.integrity import (
    PROTECTED,
    ChainHead,
    DigestLedger,
    Event,
    Protected,
    RecordedDigest,
    chain_findings,
    head_problem,
)
from forum_atlas.runtime import pgserver
from forum_atlas.store import migrations, native

MIN_PGVECTOR = (0, 5)
# What tasks/ and cli/ annotate a store connection with: they import no database driver.
Connection = psycopg.Connection


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


def chain_head(conn: psycopg.Connection) -> ChainHead | None:
    """The audit log's last event (None when the log is empty)."""
    row = conn.cursor(row_factory=dict_row).execute(
        "SELECT event_id, row_hash FROM forum.events ORDER BY event_id DESC LIMIT 1").fetchone()
    return ChainHead(row["event_id"], row["row_hash"]) if row else None


@dataclass
class AuditReport:
    """`atlas audit verify`: the hash chain, the digests of protected rows, and an exported head,
    all recomputed in Python from raw rows (forum_atlas.integrity)."""

    events: int
    chain: list[dict[str, Any]]      # event_id, problem
    content: list[dict[str, Any]]    # table_name, row_id, event_id, problem
    content_rows: int                # digests recorded
    rows_read: dict[str, int] = field(default_factory=dict)  # rows recomputed, per table
    unrecomputed: list[str] = field(default_factory=list)    # tables whose rows this version cannot digest
    head: ChainHead | None = None    # the exported head checked, if any
    head_problem: str | None = None

    @property
    def intact(self) -> bool:
        return not self.chain and not self.content and self.head_problem is None


_EVENT_COLUMNS = "event_id, prev_hash, row_hash, occurred_at, kind, flow_run_id, payload::text, digests::text"


def read_events(conn: psycopg.Connection, where: str = "", params: Sequence[Any] | Mapping[str, Any] = ()
                ) -> Iterator[Event]:
    """Audit events as stored, in id order, their jsonb as the database prints it."""
    cur = conn.cursor(row_factory=tuple_row)
    for row in cur.stream(f"SELECT {_EVENT_COLUMNS} FROM forum.events {where} ORDER BY event_id", params):
        yield Event(*row)


def verify_events(conn: psycopg.Connection) -> tuple[list[dict[str, Any]], int]:
    """(events of the audit log whose hash no longer matches their content or predecessor, events in
    all), recomputed in Python."""
    events = list(read_events(conn))
    return [f.as_link() for f in chain_findings(events)], len(events)


def _batched(conn: psycopg.Connection, name: str, query: str) -> Iterator[tuple[Any, ...]]:
    """Rows of a large read, fetched in batches by a server-side cursor (inside the caller's
    transaction)."""
    with conn.cursor(name=name, row_factory=tuple_row) as cur:
        cur.itersize = 2000
        yield from cur.execute(query)


def protected_rows(conn: psycopg.Connection, spec: Protected) -> Iterator[tuple[Any, ...]]:
    """A protected table's rows as `spec.read_columns`, jsonb as the database prints it."""
    select = ", ".join(f"{c}::text" if c in spec.text_columns else c for c in spec.read_columns)
    return _batched(conn, f"protected_{spec.table}", f"SELECT {select} FROM forum.{spec.table}")


def verify_audit(conn: psycopg.Connection, head: ChainHead | None = None) -> AuditReport:
    """Reads the raw rows in one snapshot and recomputes every content digest, anchor and chain link
    in Python: no function stored in the database takes part."""
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _verify_audit(conn, head)
    return _verify_audit(conn, head)


def _verify_audit(conn: psycopg.Connection, head: ChainHead | None) -> AuditReport:
    # Floats are read exactly whatever the database's default says.
    conn.execute("SET LOCAL extra_float_digits = 3")
    hashes: dict[int, str] = {}
    anchoring: list[Event] = []
    last: Event | None = None

    def remember(events: Iterator[Event]) -> Iterator[Event]:
        nonlocal last
        for e in events:
            hashes[e.event_id] = e.row_hash
            if e.digests is not None:
                anchoring.append(e)
            last = e
            yield e

    chain = [f.as_link() for f in chain_findings(remember(read_events(conn)))]
    recorded = (RecordedDigest(*row) for row in _batched(
        conn, "recorded_digests", "SELECT table_name, row_id, digest, xact, seq FROM forum.content_digests"))
    ledger = DigestLedger(anchoring, recorded)
    content = list(ledger.findings)
    rows_read: dict[str, int] = {}
    for spec in PROTECTED:
        findings, rows_read[spec.table] = ledger.row_findings(spec, protected_rows(conn, spec))
        content.extend(findings)
    content.sort(key=lambda f: (f.event_id is None, f.event_id or 0, f.table_name or "", f.row_id or 0))
    report = AuditReport(events=len(hashes), chain=chain, content=[f.as_dict() for f in content],
                         content_rows=sum(len(v) for v in ledger.by_table.values()), rows_read=rows_read,
                         unrecomputed=ledger.unrecomputed_tables(), head=head)
    if head is not None:
        report.head_problem = head_problem(ChainHead(last.event_id, last.row_hash) if last else None, hashes, head)
    return report


def _redact(url: str) -> str:
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    password = creds.split(":", 1)[1] if ":" in creds else ""
    return f"{scheme}://{user}:***@{host}" if password else url
