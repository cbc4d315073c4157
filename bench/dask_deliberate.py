"""A batch of deliberations on a Dask LocalCluster against the thread runner (issue 13, item 7).

    python -m bench.dask_deliberate                      # 8 questions, full SciFact, 3 runs per mode
    python -m bench.dask_deliberate --questions 16 --workers 2 --runs 1

The first N SciFact dev claims, asked as questions, are deliberated by the real `deliberate-batch` flow
(offline engine, rule verifier, hashed embedder) over the full SciFact corpus in the embedded PostgreSQL
(`bench.deliberation`'s database), in one process against the CLI's shared local Prefect API
(`flow_session`, which Dask workers reach by URL). Modes alternate run by run — the machine's speed drifts —
and the reference is the thread runner measured in the same invocation. `wall s` is the flow call,
including the Dask cluster's start and stop; `s/question` divides it by N. `same audit` compares every
question's audit counts with the reference's first run (`tests/flows/test_deliberate_dask.py` compares the
briefs whole).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from bench.deliberation import dev_claims, prepare_database
from bench.report import table


def _run(questions: list, settings, workers: int) -> dict:
    from forum_atlas.blocks.database import AtlasDatabase
    from forum_atlas.flows.deliberate_batch import AUDIT_COUNTS, deliberate_batch
    from forum_atlas.runtime.task_runners import task_runner

    batch = deliberate_batch.with_options(task_runner=task_runner(workers or None))
    start = time.perf_counter()
    summary = batch(questions, database_block=AtlasDatabase(url=settings.database_url))
    return {"wall": time.perf_counter() - start, "summary": summary,
            "audit": [[row[k] for k in AUDIT_COUNTS] for row in summary["results"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=8, help="the first N SciFact dev claims")
    parser.add_argument("--workers", type=int, default=2, help="Dask LocalCluster processes (1 thread each)")
    parser.add_argument("--runs", type=int, default=3, help="runs per mode, alternating")
    args = parser.parse_args()
    for name, value in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "ATLAS_EMBEDDER": "hashed",
                        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120", "PREFECT_LOGGING_LEVEL": "WARNING"}.items():
        os.environ.setdefault(name, value)
    from forum_atlas.flows.deliberate import DeliberationParameters
    from forum_atlas.runtime.prefect_api import flow_session

    settings, _ = prepare_database()
    questions = [DeliberationParameters(question=c["claim"]) for c in dev_claims(args.questions)]
    modes = {"threads (reference)": 0, f"dask LocalCluster {args.workers}×1": args.workers}
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    loads = [os.getloadavg()[0]]
    with flow_session():
        for _ in range(args.runs):
            for mode, workers in modes.items():
                results[mode].append(_run(questions, settings, workers))
                loads.append(os.getloadavg()[0])
    _table(results, args, loads)


def _table(results: dict[str, list[dict]], args: argparse.Namespace, loads: list[float]) -> None:
    reference = next(iter(results.values()))
    ref_wall = statistics.median(r["wall"] for r in reference)
    print(f"{args.questions} SciFact dev claims as questions, full SciFact corpus, offline engine, hashed embedder, "
          f"{args.runs} run(s) per mode, load average during runs {min(loads):.1f}–{max(loads):.1f}")
    rows = []
    for mode, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        same = all(r["audit"] == reference[0]["audit"] for r in runs)
        rows.append((mode, len(runs[0]["summary"]["briefs"]), f"{wall:.1f}", f"{wall / args.questions:.2f}",
                     f"{wall / ref_wall:.2f}", "yes" if same else "NO"))
    print(table(["task runner", "briefs", "wall s", "s/question", "× wall s", "same audit"], rows))
    print("medians; × = this mode's seconds / the thread runner's (above 1: slower); per-run wall seconds: "
          + json.dumps({mode: [round(r["wall"], 1) for r in runs] for mode, runs in results.items()}))


if __name__ == "__main__":
    main()
