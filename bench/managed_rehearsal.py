"""A managed-PostgreSQL rehearsal: the retrieval bench at 100k chunks on a second server, as a role
that is not a superuser (no C extension can be installed), with ATLAS_BM25_KERNEL=off.

    python -m bench.managed_rehearsal            # sets up the server and role, loads 100k (~5 min), measures
    python -m bench.managed_rehearsal --reuse    # measures on the corpus an earlier run loaded

What a managed service gives an application, reproduced on a second embedded server (its own data
directory, ATLAS_BENCH_DATA_DIR/managed-pgdata): an administrator creates the role (LOGIN, no
SUPERUSER / CREATEDB / CREATEROLE, no pg_write_server_files / pg_execute_server_program, so it can
create no file in the server's directories) and its database with pgvector enabled, as a service's
console does; the role runs the migrations and everything after. Shown: the role's rights, what
`atlas db status` says about the kernel (with and without ATLAS_BM25_KERNEL=off), the latency table
of bench.retrieval_speed, and that BM25 returns the same rows as the kernel does on the 100k corpus of
bench.retrieval_speed (build that first) — the same documents in the same order with the same scores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from bench.report import load_line, table
from bench.retrieval_speed import (
    QUERY_COUNT,
    WARMUP,
    data_dir,
    disk_sizes,
    existing_size,
    load_corpus,
    print_size,
    rank_bm25_reference,
)
from bench.synthetic_corpus import SyntheticCorpus

ROLE = "atlas_app"
DATABASE = "bench_managed"
KERNEL_DATABASE = "bench_retrieval_{size}"


def admin_url() -> str:
    from forum_atlas.runtime import pgserver

    return pgserver.embedded_url(data_dir() / "managed-pgdata")


def provision(url: str, *, fresh: bool, database: str = DATABASE) -> str:
    """The administrator's part: role, database owned by it, pgvector. Returns the role's URL."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"""DO $$ BEGIN CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
                           EXCEPTION WHEN duplicate_object THEN NULL; END $$""")  # roles are server-wide
        if fresh:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(ROLE)))
            conn.execute(sql.SQL("ALTER DATABASE {} SET track_functions = 'pl'").format(sql.Identifier(database)))
    with psycopg.connect(make_conninfo(url, dbname=database), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # not a trusted extension: the service enables it
        # Without this grant migration 072 fails for a non-superuser ("permission denied to set parameter
        # forum.staged_lexemes"): PostgreSQL lets only a superuser, or a role granted SET on it, put a
        # custom parameter in a function's SET clause (forum.insert_staged_chunks).
        conn.execute(sql.SQL("GRANT SET ON PARAMETER forum.staged_lexemes TO {}").format(sql.Identifier(ROLE)))
    return make_conninfo(url, dbname=database, user=ROLE)


def role_rights(role_url: str) -> dict:
    import psycopg

    with psycopg.connect(role_url) as conn:
        row = conn.execute(
            """SELECT r.rolsuper, r.rolcreatedb, r.rolcreaterole,
                      pg_has_role(current_user, 'pg_write_server_files', 'member') AS write_server_files,
                      pg_has_role(current_user, 'pg_execute_server_program', 'member') AS execute_server_program
                 FROM pg_roles r WHERE r.rolname = current_user""").fetchone()
    columns = ("superuser", "createdb", "createrole", "pg_write_server_files", "pg_execute_server_program")
    return dict(zip(columns, row))


def kernel_status(role_url: str, *, kernel_off: bool) -> str:
    """The BM25 lines of `atlas db status`, run as the role."""
    env = {**os.environ, "ATLAS_DATABASE_URL": role_url}
    env.pop("ATLAS_BM25_KERNEL", None)
    if kernel_off:
        env["ATLAS_BM25_KERNEL"] = "off"
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "atlas"), "db", "status", "--json"],
                         env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    status = json.loads(out)
    return json.dumps({k: v for k, v in status.items() if "bm25" in k.lower() or "kernel" in k.lower()})


def top_rows(db_url: str, queries: list[str], k: int = 20) -> list[list[tuple[str, float]]]:
    """BM25 top-k per query as (document external id, score): ids that do not depend on the order
    chunk ids were assigned in."""
    import psycopg

    with psycopg.connect(db_url) as conn:
        return [[(ext, score) for ext, score in conn.execute(
            """SELECT d.external_id, s.score FROM forum.bm25_search(%s, %s) s
                 JOIN forum.chunks c USING (chunk_id) JOIN forum.documents d USING (document_id)
                ORDER BY s.rank""", (q, k)).fetchall()] for q in queries]


def same_rows(kernel: list, managed: list) -> tuple[float, float]:
    """Share of queries with identical ranked documents, and the largest score difference."""
    same = [[e for e, _ in a] == [e for e, _ in b] for a, b in zip(kernel, managed)]
    diff = max((abs(x - y) for a, b in zip(kernel, managed) for (_, x), (_, y) in zip(a, b)), default=0.0)
    return sum(same) / len(same), diff


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--reuse", action="store_true", help="measure the corpus an earlier run loaded")
    args = parser.parse_args(argv)
    os.environ["ATLAS_BM25_KERNEL"] = "off"   # for this process and the query worker it starts
    from psycopg.conninfo import make_conninfo

    from bench.retrieval_speed import server_url

    url = admin_url()
    state_path = data_dir() / f"{DATABASE}.json"
    complete = state_path.exists() and json.loads(state_path.read_text()).get("complete")
    role_url = provision(url, fresh=not args.reuse)
    if not args.reuse:
        state_path.unlink(missing_ok=True)
    print(f"role {ROLE}: {role_rights(role_url)}")
    if not (args.reuse and complete):
        print(f"loading {args.size:,} chunks as {ROLE} … ({load_line()})", flush=True)
        load_corpus(role_url, args.size, state_path)
    print("atlas db status, BM25 (ATLAS_BM25_KERNEL=off):", kernel_status(role_url, kernel_off=True))
    print("atlas db status, BM25 (kernel not turned off):", kernel_status(role_url, kernel_off=False))
    load_before = load_line()
    worker = subprocess.run([sys.executable, "-m", "bench.retrieval_speed", "--query-worker", role_url, str(args.size)],
                            check=True, stdout=subprocess.PIPE, text=True)
    measured = json.loads(worker.stdout.strip().splitlines()[-1])
    measured["load"] = f"{load_before}; after: {load_line()}"
    print_size(args.size, json.loads(state_path.read_text()), measured, rank_bm25_reference(role_url, args.size, args.size),
               disk_sizes(role_url))
    kernel_db = KERNEL_DATABASE.format(size=args.size)
    main_url = server_url()
    if existing_size(main_url, kernel_db) != args.size:
        print(f"no {args.size:,}-chunk kernel corpus to compare with: run bench.retrieval_speed --sizes {args.size} first")
        return 1
    queries = SyntheticCorpus(args.size).queries(QUERY_COUNT + WARMUP)[WARMUP:]
    share, diff = same_rows(top_rows(make_conninfo(main_url, dbname=kernel_db), queries), top_rows(role_url, queries))
    print(table(["BM25 rows, managed (PL/pgSQL) vs embedded (C kernel)", "value"],
                [("queries", f"{len(queries)}"), ("identical ranked top-20 documents", f"{100 * share:.0f} %"),
                 ("largest score difference", f"{diff:.2e}")]))
    return 0 if share == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
