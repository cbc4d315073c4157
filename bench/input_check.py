"""What the whole-input check costs (issue 25, item 5): a 50,000-row JSONL is validated in one streaming
pass before anything is written.

    python -m bench.input_check [--rows 50000]

In one new embedded database (ready: migrated, server up, great-expectations imported, one small ingest
run first so the temporary Prefect API is up), with the hashed embedder:
- the refusal: the rows with the last one bad (an impossible publication date) — seconds until the flow
  fails, and what it wrote (before: 49,000 rows committed in 131 s);
- the good file ingested whole, and, on the same file in the same process, the pieces of the check: the
  pass as it runs now (read + parse + validation in parts of 10,000 rows + the new-content look-up), the
  read + parse alone (the pass before this change), and the validation the batches used to run
  (1,000-row batches, which no longer validate JSON lines). The ratios are to the good ingest's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.ingest import REPO, write_synthetic_jsonl
from bench.report import table


def _child(good: str, bad: str, data_dir: str) -> None:
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.config import settings_from_env
    from forum_atlas.flows.ingest import ingest
    from forum_atlas.ingestion.records import iter_raw, load_rows, scan_input
    from forum_atlas.ingestion.validation import BatchValidationError, validate_rows, warm_up_in_background
    from forum_atlas.store.db import shared_database
    from forum_atlas.tasks.ingest import check_input

    os.environ["ATLAS_DATA_DIR"] = data_dir
    settings = settings_from_env()
    db = shared_database(settings)
    warm_up_in_background().join()
    out: dict = {}
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        warm = Path(data_dir) / "warm.jsonl"
        warm.write_text("".join(line for _, line in zip(range(5), open(good, encoding="utf-8"))), encoding="utf-8")
        ingest(str(warm))
        start = time.perf_counter()
        try:
            ingest(bad)
        except BatchValidationError as exc:
            out["refused"] = exc.report.failed_origins
        out["refusal_seconds"] = time.perf_counter() - start
        with db.connection() as conn:
            out["written_by_refusal"] = conn.execute("SELECT count(*) AS n FROM forum.documents").fetchone()["n"] - 5
        print(json.dumps(out), flush=True)   # each stage as it ends: a long run still says what it measured
        now = datetime.now(UTC)
        start = time.perf_counter()
        check_input.fn(settings, Path(good), "jsonl", None, settings.max_record_bytes, now)
        out["pass_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        scan_input(Path(good), "jsonl")
        out["scan_only_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        for raw in iter_raw(Path(good), "jsonl", batch_size=1000):
            validate_rows(load_rows(raw), max_record_bytes=settings.max_record_bytes, run_started=now)
        out["batch_validation_seconds"] = time.perf_counter() - start
        print(json.dumps(out), flush=True)
        start = time.perf_counter()
        summary = ingest(good)
        out["ingest_wall_seconds"] = time.perf_counter() - start
        out["ingest_rows"], out["ingest_seconds"] = summary["rows"], summary["seconds"]
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    for name, value in (("PREFECT_SERVER_ANALYTICS_ENABLED", "false"), ("DO_NOT_TRACK", "1"),
                        ("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120"), ("PREFECT_LOGGING_LEVEL", "WARNING")):
        os.environ.setdefault(name, value)
    with tempfile.TemporaryDirectory(prefix="atlas-bench-check-") as folder:
        good = write_synthetic_jsonl(Path(folder) / "good.jsonl", args.rows)
        bad = Path(folder) / "bad.jsonl"
        lines = good.read_text(encoding="utf-8").splitlines(keepends=True)
        last = json.loads(lines[-1])
        last["published_at"] = "2024-13-45"
        bad.write_text("".join(lines[:-1]) + json.dumps(last) + "\n", encoding="utf-8")
        data_dir = Path(folder) / "data"
        env = {**os.environ, "PREFECT_HOME": str(Path(folder) / "prefect"), "ATLAS_EMBEDDER": "hashed"}
        run = subprocess.run([sys.executable, "-m", "bench.input_check", "--child", str(good), str(bad), str(data_dir)],
                             cwd=REPO, capture_output=True, text=True, env=env)
        if run.returncode != 0:
            raise RuntimeError(run.stderr[-4000:])
        r = json.loads(run.stdout.strip().splitlines()[-1])
    ingest_s = r["ingest_seconds"]
    print(f"{args.rows:,} rows; machine load {os.getloadavg()[0]:.2f}")
    print(f"refusal (last row bad): {r['refusal_seconds']:.1f} s, rows written {r['written_by_refusal']}, "
          f"named {r.get('refused')}")
    print(table(["measure", "seconds", "x ingest"], [
        (label, f"{r[key]:.1f}", f"{r[key] / ingest_s:.3f}")
        for label, key in (("good ingest (flow's own seconds)", "ingest_seconds"),
                           ("good ingest (wall, the flow call)", "ingest_wall_seconds"),
                           ("check-input pass now (read, parse, validate, look-up)", "pass_seconds"),
                           ("  of which read + parse alone (the pass before)", "scan_only_seconds"),
                           ("validation the batches ran before (1,000-row)", "batch_validation_seconds"))]))
    extra = r["pass_seconds"] - r["scan_only_seconds"] - r["batch_validation_seconds"]
    print(f"net extra cost of the pass (now − before − batch validation removed): {extra:+.1f} s = "
          f"{extra / ingest_s:+.3f} x the good ingest")


if __name__ == "__main__":
    main()
