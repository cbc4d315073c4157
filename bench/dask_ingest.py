"""Ingestion on a Dask LocalCluster against the single-process run (issue 13, item 7).

    python -m bench.dask_ingest                          # full SciFact, hashed embedder, 3 runs per mode
    python -m bench.dask_ingest --runs 1 --embedder onnx-minilm --docs 1000   # the default model, first 1,000 abstracts

Each run ingests the corpus with the real `ingest` flow (CLI defaults: batches of 1,000) into a new
embedded PostgreSQL, in a fresh subprocess, against the CLI's shared local Prefect API (`flow_session`,
which Dask workers reach by URL). Modes alternate run by run — the machine's speed drifts — and the
reference is the thread runner measured in the same invocation. `flow s` is the flow's own `seconds`;
`wall s` adds the Dask cluster's start and stop. `same rows` compares a fingerprint of every stored
document, chunk, embedding and BM25 posting with the reference's first run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import table

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "beir" / "corpus.jsonl"
# What the ingest stores, each table as one digest over its rows in a fixed order (write times left out).
FINGERPRINT = {
    "documents": "SELECT md5(string_agg((document_id, source_id, external_id, version, content_hash, body)::text, '|' "
                 "ORDER BY document_id)) FROM forum.documents",
    "chunks": "SELECT md5(string_agg(c::text, '|' ORDER BY chunk_id)) FROM forum.chunks c",
    "embeddings": "SELECT md5(string_agg(e::text, '|' ORDER BY chunk_id, model_id)) FROM forum.embeddings e",
    "bm25_postings": "SELECT md5(string_agg(p::text, '|' ORDER BY term, first_chunk)) FROM forum.bm25_postings p",
}


def _child(corpus: str, data_dir: str, dask_workers: int) -> None:
    """Runs in a subprocess: one ingest with the runner asked for; prints its figures as JSON."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.flows.ingest import ingest
    from forum_atlas.ingestion.validation import warm_up_in_background
    from forum_atlas.runtime.prefect_api import flow_session
    from forum_atlas.runtime.task_runners import task_runner
    from forum_atlas.store.db import shared_database

    os.environ["ATLAS_DATA_DIR"] = data_dir
    db = shared_database(settings_from_env())   # server started and migrated before the clock starts
    warm_up_in_background().join()
    with flow_session():
        start = time.perf_counter()
        summary = ingest.with_options(task_runner=task_runner(dask_workers or None))(corpus, format="beir")
        wall = time.perf_counter() - start
    with db.connection() as conn:
        fingerprint = {table: conn.execute(query).fetchone()["md5"] for table, query in FINGERPRINT.items()}
    print(json.dumps({"summary": summary, "wall": wall, "fingerprint": fingerprint}))


def _run(corpus: Path, embedder: str, dask_workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as data_dir:
        env = {**os.environ, "PREFECT_HOME": str(Path(data_dir) / "prefect"), "ATLAS_EMBEDDER": embedder}
        out = subprocess.run([sys.executable, "-m", "bench.dask_ingest", "--child", str(corpus), data_dir,
                              str(dask_workers)], check=False, cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"ingesting {corpus.name} ({dask_workers} Dask workers) failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5183, help="the first N SciFact abstracts")
    parser.add_argument("--embedder", default="hashed", help="hashed (model cost ~0) or onnx-minilm (the default model)")
    parser.add_argument("--workers", type=int, default=2, help="Dask LocalCluster processes (1 thread each)")
    parser.add_argument("--runs", type=int, default=3, help="runs per mode, alternating")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    for name, value in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", "PREFECT_LOGGING_LEVEL": "WARNING"}.items():
        os.environ.setdefault(name, value)
    modes = {"threads (reference)": 0, f"dask LocalCluster {args.workers}×1": args.workers}
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    loads = []
    with tempfile.TemporaryDirectory(prefix="atlas-corpus-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        with SCIFACT.open(encoding="utf-8") as source, corpus.open("w", encoding="utf-8") as out:
            out.writelines(line for _, line in zip(range(args.docs), source))
        for _ in range(args.runs):
            for mode, workers in modes.items():
                results[mode].append(_run(corpus, args.embedder, workers))
                loads.append(os.getloadavg()[0])
    _table(results, args, loads)


def _table(results: dict[str, list[dict]], args: argparse.Namespace, loads: list[float]) -> None:
    reference_mode = next(iter(results))
    reference = results[reference_mode]
    ref_flow = statistics.median(r["summary"]["seconds"] for r in reference)
    ref_wall = statistics.median(r["wall"] for r in reference)
    print(f"SciFact, first {args.docs:,} abstracts, embedder {args.embedder}, {args.runs} run(s) per mode, "
          f"load average during runs {min(loads):.1f}–{max(loads):.1f}")
    rows = []
    for mode, runs in results.items():
        flow_s = statistics.median(r["summary"]["seconds"] for r in runs)
        wall_s = statistics.median(r["wall"] for r in runs)
        chunks = runs[0]["summary"]["chunks_added"]
        same = all(r["fingerprint"] == reference[0]["fingerprint"] for r in runs)
        rows.append((mode, f"{chunks:,}", f"{flow_s:.1f}", f"{wall_s:.1f}", f"{chunks / flow_s:.0f}",
                     f"{flow_s / ref_flow:.2f}", f"{wall_s / ref_wall:.2f}", "yes" if same else "NO"))
    print(table(["task runner", "chunks", "flow s", "wall s", "chunks/s", "× flow s", "× wall s", "same rows"], rows))
    print("medians; × = this mode's seconds / the thread runner's (above 1: slower); per-run flow seconds: "
          + json.dumps({mode: [r["summary"]["seconds"] for r in runs] for mode, runs in results.items()}))


if __name__ == "__main__":
    main()
