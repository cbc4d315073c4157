"""What a flow run pays to reach the embedded database, with and without `atlas ops up`'s holder.

    python -m bench.ops_startup [--runs 5]

Each run is a fresh process that opens the embedded PostgreSQL of one data directory and closes it,
as a worker's flow-run subprocess does. Without a holder (and ATLAS_IDLE_SECONDS=0) the server stops as
soon as the run has left, so every run pays the start-up; with the holder
(`python -m forum_atlas.runtime.ops_stack hold-database`, which `atlas ops up` starts) runs join a
running server. Two times per process: `Database.open()` alone (measured inside it) and the whole
process (interpreter, imports, open; the server's watchdog stops it after the process has exited).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import load_line, table

# Timed inside the child, so interpreter start-up and imports (the same either way) are left out.
OPEN = ("import time; from forum_atlas.store.db import Database; t = time.perf_counter(); "
        "Database.open().close(); print(time.perf_counter() - t)")


def _timed(env: dict[str, str]) -> tuple[float, float]:
    """(seconds in Database.open(), seconds of the whole process: imports, open, and the stop at exit)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", OPEN], env=env, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1]), time.perf_counter() - started


def _stopped_then_timed(env: dict[str, str], folder: str) -> tuple[float, float]:
    """_timed once the server of the run before has stopped (its watchdog stops it within seconds)."""
    deadline = time.monotonic() + 60
    while (Path(folder) / "pgdata" / "postmaster.pid").exists():
        assert time.monotonic() < deadline, "without a holder the server stops once the last process has left"
        time.sleep(0.2)
    return _timed(env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-ops-") as folder:
        env = {**os.environ, "ATLAS_DATA_DIR": folder, "ATLAS_BM25_KERNEL": "off", "ATLAS_IDLE_SECONDS": "0"}
        env.pop("ATLAS_DATABASE_URL", None)
        subprocess.run([sys.executable, "-c", OPEN], env=env, check=True, capture_output=True)   # initdb + migrate once
        rows = {"no holder: each run starts and stops the server": [_stopped_then_timed(env, folder)
                                                                    for _ in range(args.runs)]}
        holder = subprocess.Popen([sys.executable, "-m", "forum_atlas.runtime.ops_stack", "hold-database"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        holder.stdout.readline()   # "holding the embedded PostgreSQL in …"
        try:
            rows["held by atlas ops: each run joins it"] = [_timed(env) for _ in range(args.runs)]
        finally:
            holder.send_signal(signal.SIGTERM)
            holder.wait(timeout=60)
    held = [statistics.median(column) for column in zip(*rows["held by atlas ops: each run joins it"])]
    lines = []
    for name, times in rows.items():
        opened, whole = (statistics.median(column) for column in zip(*times))
        lines.append((name, f"{opened:.2f}", f"{opened / held[0]:.1f}", f"{whole:.2f}", f"{whole / held[1]:.2f}"))
    print(load_line())
    print(table([f"a fresh process (median of {args.runs})", "open s", "x held", "process s", "x held"], lines))


if __name__ == "__main__":
    main()
