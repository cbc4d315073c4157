"""Numbered SQL migrations (package data `forum_atlas.sql`: the `sql/` folder), applied in order,
each recorded with its checksum.

A migration that was applied and has changed since is refused: the schema on disk and the schema
in the database would no longer be the same thing. Concurrent runners serialise on an advisory lock.
`sql/MIGRATIONS.sha256` lists every migration's checksum (tests/store/test_migration_checksums.py
holds the files to it); a new migration's line is appended with

    python -m forum_atlas.store.migrations checksum sql/0NN_name.sql
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

from forum_atlas.resources import sql_folder

_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
CHECKSUMS = "MIGRATIONS.sha256"  # `<sha256>  <filename>` per migration, as sha256sum writes them
_LOCK_KEY = 0x466F72756D  # "Forum"


class MigrationError(RuntimeError):
    pass


class MigrationChecksumError(MigrationError):
    pass


@dataclass(frozen=True)
class Migration:
    number: int
    filename: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def sql_dir() -> Path:
    return sql_folder()


def discover(directory: Path | None = None) -> list[Migration]:
    """The migrations in `directory` (default: the installed package's), in order. An empty or
    missing set is an error: "migrating" a database to nothing would look like success."""
    directory = directory or sql_dir()
    if not directory.is_dir():
        raise MigrationError(f"the migrations folder {directory} does not exist: the installation is incomplete")
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNN_lower_snake.sql")
        found.append(Migration(int(match.group(1)), path.name, path.read_text(encoding="utf-8")))
    if not found:
        raise MigrationError(f"no migration (NNN_name.sql) in {directory}: the installation is incomplete")
    numbers = [m.number for m in found]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"duplicate migration numbers in {directory}: {numbers}")
    return found


def _ensure_table(conn: psycopg.Connection) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS forum")
    conn.execute(
        """CREATE TABLE IF NOT EXISTS forum.schema_migrations (
               filename text PRIMARY KEY,
               checksum text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())"""
    )


def applied(conn: psycopg.Connection) -> list[dict]:
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    exists = cur.execute("SELECT to_regclass('forum.schema_migrations') AS t").fetchone()["t"]
    if not exists:
        return []
    return cur.execute("SELECT filename, checksum, applied_at FROM forum.schema_migrations ORDER BY filename").fetchall()


def apply_pending(conn: psycopg.Connection, directory: Path | None = None, *, before: int | None = None) -> list[str]:
    """Apply every migration not yet recorded; return the filenames applied now. `before`: only those
    numbered below it (a database as an older checkout left it, for tests and benchmarks)."""
    migrations = discover(directory)
    newly: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        _ensure_table(conn)
        done = {row["filename"]: row["checksum"] for row in applied(conn)}
        for migration in migrations:
            if before is not None and migration.number >= before:
                continue
            recorded = done.get(migration.filename)
            if recorded is not None:
                if recorded != migration.checksum:
                    raise MigrationChecksumError(
                        f"{migration.filename} was applied with checksum {recorded[:12]}… but the file now "
                        f"hashes to {migration.checksum[:12]}…; applied migrations must never change — "
                        "add a new numbered migration instead"
                    )
                continue
            with conn.transaction():
                conn.execute(migration.sql)
                conn.execute(
                    "INSERT INTO forum.schema_migrations (filename, checksum) VALUES (%s, %s)",
                    (migration.filename, migration.checksum),
                )
            newly.append(migration.filename)
        unknown = sorted(set(done) - {m.filename for m in migrations})
        if unknown:
            raise MigrationError(f"the database has migrations this checkout does not know: {unknown}")
    return newly


def append_checksum(path: Path) -> str:
    """Append a new migration's line to the checksum list beside it; return the line. A file already
    listed is refused: its line was written when it was added, and applied migrations never change."""
    match = _NAME.match(path.name)
    if not match or not path.is_file():
        raise MigrationError(f"{path}: not a migration file (NNN_lower_snake.sql)")
    line = f"{Migration(int(match.group(1)), path.name, path.read_text(encoding='utf-8')).checksum}  {path.name}"
    listing = path.parent / CHECKSUMS
    text = listing.read_text(encoding="utf-8") if listing.exists() else ""
    if any(entry.split()[-1:] == [path.name] for entry in text.splitlines()):
        raise MigrationError(f"{path.name} is already in {listing}; applied migrations are never edited — "
                             "add a new numbered file instead")
    listing.write_text(text + ("" if text.endswith("\n") or not text else "\n") + line + "\n", encoding="utf-8")
    return line


def main(argv: list[str] | None = None) -> int:
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] != "checksum":
        print("usage: python -m forum_atlas.store.migrations checksum sql/NNN_name.sql [...]", file=sys.stderr)
        return 2
    try:
        for name in args[1:]:
            print(append_checksum(Path(name)))
    except MigrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
