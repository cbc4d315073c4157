"""What a refusal of wrong input costs now that the CLI checks it before the database or Prefect starts
(issue 36, item 3): wall seconds of the real `atlas` command, in a subprocess, until it exits with its one-line
error — a missing path, a folder with no files, a data directory that is a file, a stop-words-only question.

    python -m bench.preflight [--runs 5]

Floor: `atlas --help` (Python's start and the parser: what every command pays). Reference, same run: the refusal
the ingest flow itself makes of a missing path (what `atlas ingest` did before: the embedded database and the
local Prefect API start first — 25–60 s at load ~10 in the issue), as a deployment's run still does."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import load_line, table

REPO = Path(__file__).resolve().parent.parent
FLOW_REFUSAL = ("from forum_atlas.runtime.prefect_api import flow_session\n"
                "from forum_atlas.flows.ingest import ingest\n"
                "with flow_session():\n"
                "    try:\n        ingest({path!r})\n    except Exception as exc:\n        print(exc)\n")


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    run = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO, timeout=900)
    return time.perf_counter() - start, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference-runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-preflight-") as folder:
        root = Path(folder)
        (root / "empty").mkdir()
        (root / "library").mkdir()
        (root / "library" / "notes.md").write_text("# Notes\n\nSomething to ingest.", encoding="utf-8")
        (root / "a-file").write_text("")
        env = {k: v for k, v in os.environ.items() if k not in ("ATLAS_DATABASE_URL", "PREFECT_API_URL")}
        env.update(ATLAS_DATA_DIR=str(root / "data"), PREFECT_HOME=str(root / "prefect"), ATLAS_EMBEDDER="hashed",
                   PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1", ATLAS_IDLE_SECONDS="5")
        atlas = [sys.executable, "-m", "forum_atlas.cli.main"]
        cases = [
            ("atlas --help (floor)", atlas + ["--help"], {}),
            ("ingest a missing path", atlas + ["ingest", str(root / "missing")], {}),
            ("ingest an empty folder", atlas + ["ingest", str(root / "empty")], {}),
            ("a data dir that is a file", atlas + ["ingest", str(root / "library")], {"ATLAS_DATA_DIR": str(root / "a-file")}),
            ("ask 'the of and'", atlas + ["ask", "the of and"], {}),
        ]
        rows, floor = [], None
        for label, argv, extra in cases:
            seconds = []
            for _ in range(args.runs):
                elapsed, run = _timed(argv, {**env, **extra})
                expected = 0 if "--help" in argv else 1
                if run.returncode != expected:
                    raise RuntimeError(f"{label}: exit {run.returncode}: {run.stderr[-2000:]}")
                seconds.append(elapsed)
            median = statistics.median(seconds)
            floor = floor or median
            rows.append((label, f"{median:.2f}", f"{max(seconds):.2f}", f"{median / floor:.2f}"))
            assert not (root / "data").exists() and not (root / "prefect").exists(), "a refusal started something"
        reference = [_timed([sys.executable, "-c", FLOW_REFUSAL.format(path=str(root / "missing"))], env)[0]
                     for _ in range(args.reference_runs)]
        median = statistics.median(reference)
        rows.append(("reference: the ingest flow refusing a missing path (Prefect API started first)",
                     f"{median:.2f}", f"{max(reference):.2f}", f"{median / floor:.2f}"))
    print(load_line())
    print(f"{args.runs} runs per refusal, {args.reference_runs} of the reference; wall seconds of the whole command")
    print(table(["refusal", "median s", "max s", "x floor"], rows))


if __name__ == "__main__":
    main()
