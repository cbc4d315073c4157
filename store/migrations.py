"""The schema (package data `forum_atlas.sql`): numbered migrations in `sql/migrations/`, applied in
order, each recorded with its checksum; then the function files of `sql/functions/`, each holding the
one current definition of its functions.

A migration that was applied and has changed since is refused: the schema on disk and the schema
in the database would no longer be the same thing. `sql/migrations/MIGRATIONS.sha256` lists every
migration's checksum (tests/store/test_migration_checksums.py holds the files to it); a new
migration's line is appended with

    python -m forum_atlas.store.migrations checksum sql/migrations/0NN_name.sql

A function file is applied again whenever it changed since it was last applied (its checksum is
recorded in forum.schema_functions), and after any migration (which may have replaced or dropped
what a file defines), in the order `sql/functions/ORDER` lists. Migrations and function files apply
in one transaction under one advisory lock, so concurrent runners serialise and a failure applies
nothing.
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
FUNCTION_ORDER = "ORDER"  # sql/functions/ORDER: the function files, one per line, in dependency order
_LOCK_KEY = 0x466F72756D  # "Forum"


class MigrationError(RuntimeError):
    pass


class MigrationChecksumError(MigrationError):
    pass


def _checksum(sql: str) -> str:
    return hashlib.sha256(sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Migration:
    number: int
    filename: str
    sql: str

    @property
    def checksum(self) -> str:
        return _checksum(self.sql)


@dataclass(frozen=True)
class FunctionFile:
    filename: str
    sql: str

    @property
    def checksum(self) -> str:
        return _checksum(self.sql)


def sql_dir() -> Path:
    """The schema's folder: `migrations/` and `functions/` (and the kernel's sources, `native/`)."""
    return sql_folder()


def discover(directory: Path | None = None) -> list[Migration]:
    """The migrations in `directory` (default: the installed package's `sql/migrations`), in order. An
    empty or missing set is an error: "migrating" a database to nothing would look like success."""
    directory = directory or sql_dir() / "migrations"
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


def discover_functions(directory: Path | None = None) -> list[FunctionFile]:
    """The function files in `directory` (default: the installed package's `sql/functions`), in the
    order its ORDER file lists them. A file ORDER does not list, or a listed file that is missing, is
    an error: either would leave a function's current definition unapplied."""
    directory = directory or sql_dir() / "functions"
    order = directory / FUNCTION_ORDER
    if not order.is_file():
        raise MigrationError(f"{order} does not exist: the installation is incomplete")
    listed = [line.strip() for line in order.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")]
    present = {p.name for p in directory.glob("*.sql")}
    if unlisted := sorted(present - set(listed)):
        raise MigrationError(f"{unlisted} in {directory} are not listed in {FUNCTION_ORDER}")
    if missing := sorted(set(listed) - present):
        raise MigrationError(f"{FUNCTION_ORDER} lists {missing}, which are not in {directory}")
    if len(set(listed)) != len(listed):
        raise MigrationError(f"{FUNCTION_ORDER} lists a file twice: {listed}")
    return [FunctionFile(name, (directory / name).read_text(encoding="utf-8")) for name in listed]


# What the runner applied, each with its checksum. Both tables are created here, not by a migration. Function
# files have a table of their own: one is applied again when it changes, where a changed migration is refused
# (and an older checkout, which checks every schema_migrations row against its files, still opens the database).
_RECORDS = ("schema_migrations", "schema_functions")


def _ensure_tables(conn: psycopg.Connection) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS forum")
    for table in _RECORDS:
        conn.execute(f"""CREATE TABLE IF NOT EXISTS forum.{table} (
                             filename text PRIMARY KEY,
                             checksum text NOT NULL,
                             applied_at timestamptz NOT NULL DEFAULT now())""")


def _recorded(conn: psycopg.Connection, table: str) -> list[dict]:
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    if not cur.execute("SELECT to_regclass(%s) AS t", (f"forum.{table}",)).fetchone()["t"]:
        return []
    return cur.execute(f"SELECT filename, checksum, applied_at FROM forum.{table} ORDER BY filename").fetchall()


def applied(conn: psycopg.Connection) -> list[dict]:
    return _recorded(conn, "schema_migrations")


def applied_functions(conn: psycopg.Connection) -> list[dict]:
    return _recorded(conn, "schema_functions")


def apply_pending(conn: psycopg.Connection, directory: Path | None = None, *, before: int | None = None) -> list[str]:
    """Apply every migration not yet recorded, then every function file that changed (all of them when a
    migration was applied); return the filenames applied now (function files as `functions/<name>`).
    `directory`: a schema folder holding `migrations/` and `functions/` (default: the package's).
    `before`: only the migrations numbered below it and no function file — a database as a checkout
    before the function files left it (for tests and benchmarks)."""
    root = directory or sql_dir()
    migrations = discover(root / "migrations")
    functions = [] if before is not None else discover_functions(root / "functions")
    newly: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        _ensure_tables(conn)
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
        if before is None:
            newly += _apply_functions(conn, functions, everything=bool(newly))
    return newly


def _apply_functions(conn: psycopg.Connection, functions: list[FunctionFile], *, everything: bool) -> list[str]:
    recorded = {row["filename"]: row["checksum"] for row in applied_functions(conn)}
    newly = []
    for function_file in functions:
        if not everything and recorded.get(function_file.filename) == function_file.checksum:
            continue
        conn.execute(function_file.sql)
        conn.execute(
            """INSERT INTO forum.schema_functions (filename, checksum) VALUES (%s, %s)
               ON CONFLICT (filename) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()""",
            (function_file.filename, function_file.checksum),
        )
        newly.append(f"functions/{function_file.filename}")
    # A file removed from the checkout: its functions went with a migration that dropped them.
    conn.execute("DELETE FROM forum.schema_functions WHERE NOT filename = ANY (%s)",
                 ([f.filename for f in functions],))
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
        print("usage: python -m forum_atlas.store.migrations checksum sql/migrations/NNN_name.sql [...]", file=sys.stderr)
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
