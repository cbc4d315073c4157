"""What `atlas audit verify` costs, before and after it moved out of the database (issue 25).

    python -m bench.audit_verify                       # the demo workload, 10k and 100k chunks
    python -m bench.audit_verify --sizes demo,10000    # fewer
    python -m bench.audit_verify --repeats 5
    python -m bench.audit_verify --reuse               # `after` only, on databases an earlier run built

For each workload, one fresh embedded database is built at the schema before sql/120: the corpus
(`demo`: the bundled sample's 200 SciFact abstracts; a number: that many synthetic chunks) and the
demo's four series vintages. Then, on that database:

- **before**: the stored verifiers of sql/032, `forum.verify_event_chain()` and
  `forum.verify_content_digests()` (5 tables digested, inside PostgreSQL);
- sql/120 applied (its backfill of the newly covered tables, timed), then the demo's lane forecasts
  bound and scored (the binding task opens the database the usual way, which migrates it, so they
  come after: a few rows, nothing beside the corpus);
- **after**: `verify_audit` (13 tables; raw rows read and every digest, anchor and link recomputed in
  Python), and its floor: the same rows read, streamed, and nothing computed.

Medians of `--repeats` runs; the machine is shared, so compare within a row. With `--reuse`, a
workload's database from an earlier run (already past sql/120) is measured again, `after` and floor
only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

DEMO_JSONL = Path(__file__).resolve().parents[1] / "data" / "sample" / "scifact_sample.jsonl"
SERIES = Path(__file__).resolve().parents[1] / "data" / "series"
FIRST_MIGRATION_MEASURED = 120


def _records(workload: str):
    from bench.synthetic_corpus import SyntheticCorpus
    from forum_atlas.ingestion.records import Record, SourceInfo

    if workload != "demo":
        yield from SyntheticCorpus(int(workload)).records(1000)
        return
    source = SourceInfo(name="SciFact sample", importance=3, quality_score=4, licence="ODC-By-1.0",
                        url="https://github.com/allenai/scifact", sector="health")
    rows = [json.loads(line) for line in DEMO_JSONL.read_text().splitlines() if line.strip()]
    yield [Record(external_id=r["id"], title=r["title"], text=r["text"], source=source, sector="health")
           for r in rows]


def build(server_url: str, workload: str) -> str:
    """A database at the schema before sql/120, holding the corpus and vintages; returns its URL."""
    import psycopg

    from bench.corpus_loading import fresh_database, load
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.forecasting.demo import DEMO_FILES
    from forum_atlas.series.connectors.file import read_series_files
    from forum_atlas.series.coverage import check_coverage
    from forum_atlas.store import forecasts, migrations
    from forum_atlas.store.db import Database

    url = fresh_database(server_url, f"atlas_bench_audit_verify_{workload}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrations.apply_pending(conn, before=FIRST_MIGRATION_MEASURED)
    with Database.open(Settings(database_url=url), migrate=False) as db:
        load(db, _records(workload), make_embedder("hashed"), progress=workload != "demo")
        forecasts.load_vintages(db, read_series_files([SERIES / name for name in DEMO_FILES]),
                                check_coverage=check_coverage)
    return url


def forecast_and_score(url: str) -> None:
    from forum_atlas.config import Settings
    from forum_atlas.forecasting.demo import DEMO_QUESTIONS, ISSUED_AT, SCORED_AT
    from forum_atlas.store.db import shared_database
    from forum_atlas.tasks.forecasting import issue_bound_forecast
    from forum_atlas.tasks.scoring import run_scoring

    db = shared_database(Settings(database_url=url))
    for question in DEMO_QUESTIONS:
        issue_bound_forecast(db, question, ISSUED_AT, None, seed=1)
    with db.transaction() as conn:
        run_scoring(conn, mode="nightly", as_of=SCORED_AT)


def _median(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def built_earlier(server_url: str, workload: str) -> str | None:
    """The URL of the workload's database from an earlier run, if it is already past sql/120."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    url = make_conninfo(server_url, dbname=f"atlas_bench_audit_verify_{workload}")
    try:
        with psycopg.connect(url) as conn:
            done = conn.execute("SELECT 1 FROM forum.schema_migrations WHERE filename >= %s",
                                (f"{FIRST_MIGRATION_MEASURED}_",)).fetchone()
    except psycopg.Error:
        return None
    return url if done else None


def measure(url: str, repeats: int, *, built_now: bool) -> dict:
    import psycopg
    from psycopg.rows import dict_row

    from forum_atlas.integrity import PROTECTED
    from forum_atlas.store import migrations
    from forum_atlas.store.db import protected_rows, verify_audit

    m: dict = {"before_s": None, "migration_s": None, "digests_before": None}
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        def before():
            chain = conn.execute("SELECT count(*) AS n FROM forum.verify_event_chain()").fetchone()["n"]
            content = conn.execute("SELECT count(*) AS n FROM forum.verify_content_digests()").fetchone()["n"]
            return chain + content

        if built_now:
            m["before_s"], problems = _median(before, repeats)
            assert problems == 0, problems
            m["digests_before"] = conn.execute("SELECT count(*) AS n FROM forum.content_digests").fetchone()["n"]
            start = time.perf_counter()
            migrations.apply_pending(conn)
            m["migration_s"] = time.perf_counter() - start
            forecast_and_score(url)
        m["after_s"], report = _median(lambda: verify_audit(conn), repeats)

        def floor():
            with conn.transaction():
                n = sum(1 for _ in conn.execute("SELECT * FROM forum.events"))
                with conn.cursor(name="digests") as cur:
                    cur.itersize = 2000
                    n += sum(1 for _ in cur.execute("SELECT * FROM forum.content_digests"))
                for spec in PROTECTED:
                    n += sum(1 for _ in protected_rows(conn, spec))
            return n

        m["floor_s"], _ = _median(floor, repeats)
    assert report.intact, (report.chain, report.content[:5])
    return {**m, "chunks": report.rows_read["chunks"], "events": report.events, "digests_after": report.content_rows}


def _shown(value: float | int | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def main(argv: list[str] | None = None) -> int:
    from forum_atlas.runtime import pgserver

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="demo,10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="measure databases an earlier run built (after only)")
    args = parser.parse_args(argv)
    home = Path(os.environ.get("ATLAS_BENCH_DATA_DIR", "/tmp/atlas-bench-audit-verify"))
    server_url = pgserver.embedded_url(home / "pgdata")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}, repeats {args.repeats}")
    rows = []
    for workload in args.sizes.split(","):
        url = built_earlier(server_url, workload) if args.reuse else None
        built_now = url is None
        if built_now:
            start = time.perf_counter()
            url = build(server_url, workload)
            print(f"{workload}: built in {time.perf_counter() - start:.0f} s", flush=True)
        rows.append((workload, measure(url, args.repeats, built_now=built_now)))
    print("| workload | chunks | events | digests before → after | before: SQL verifiers s | sql/120 backfill s "
          "| after: Python verify s | after ÷ before | read floor s | after ÷ floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload, m in rows:
        ratio = m["after_s"] / m["before_s"] if m["before_s"] else None
        print(f"| {workload} | {m['chunks']:,} | {m['events']:,} | {_shown(m['digests_before'], ',')} → "
              f"{m['digests_after']:,} | {_shown(m['before_s'], '.2f')} | {_shown(m['migration_s'], '.2f')} "
              f"| {m['after_s']:.2f} | {_shown(ratio, '.2f')} | {m['floor_s']:.2f} | {m['after_s'] / m['floor_s']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
