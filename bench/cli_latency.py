"""What a CLI command that runs a flow waits for, and whether first commands can start together (issue 25, item 2).

    python -m bench.cli_latency [--runs 5] [--concurrent 10]

On the demo corpus (the bundled SciFact sample, ingested once with the default embedder into a new data
directory), each row runs `atlas ask` as a fresh process, one after another:
- "warm": the shared Prefect API of the Prefect home and the embedded PostgreSQL are running (kept for
  ATLAS_IDLE_SECONDS, here 60, after a command), so the command joins both;
- "cold" (the reference, what every command paid when each started a temporary Prefect server of its
  own): nothing runs (ATLAS_IDLE_SECONDS=0, and the bench waits until both have stopped), so the command
  starts both;
- "no flow": `atlas brief show` in the same environment, a command that imports no Prefect and runs no
  flow: the floor of a fresh process that opens the database.
"CPU s" is the command's own CPU time (the servers' is not in it), steadier than wall time on a busy machine.
Then the concurrent trial: `--concurrent` `atlas ask` processes started at once on a new, empty Prefect
home (a first command for each), counting those that exit 0; before the shared API each started a server
on the same new SQLite database, and 2 of 9 such trials had a process fail on its set-up.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forum_atlas.resources import data_file

QUESTION = "Does vitamin D supplementation reduce the risk of fractures?"


def _atlas(env: dict[str, str], *args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and the processes it waited for — not the servers it joined)."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"atlas {' '.join(args)} failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _servers_running(env: dict[str, str]) -> bool:
    return (Path(env["PREFECT_HOME"]) / "atlas-api.json").exists() or \
        (Path(env["ATLAS_DATA_DIR"]) / "pgdata" / "postmaster.pid").exists()


def _cold(env: dict[str, str]) -> tuple[float, float]:
    deadline = time.monotonic() + 120
    while _servers_running(env):
        assert time.monotonic() < deadline, "the servers did not stop within 120 s of idleness"
        time.sleep(0.5)
    time.sleep(1.0)   # the Prefect server's process ends shortly after it unregisters
    return _atlas(env, "ask", QUESTION)


def concurrent_first_commands(env: dict[str, str], processes: int) -> tuple[int, float, list[str]]:
    """(how many exited 0, seconds until the last ended, the last line of each failure's error output)."""
    started = time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "ask", f"{QUESTION} ({i})"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(processes)]
    errors = [process.communicate()[1] for process in running]
    failures = [err.strip().splitlines()[-1] if err.strip() else "(no output)"
                for process, err in zip(running, errors) if process.returncode != 0]
    return processes - len(failures), time.perf_counter() - started, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atlas-bench-cli-") as folder:
        env = {**os.environ, "ATLAS_DATA_DIR": f"{folder}/data", "PREFECT_HOME": f"{folder}/prefect",
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180", "ATLAS_IDLE_SECONDS": "60"}
        for name in ("ATLAS_DATABASE_URL", "PREFECT_API_URL", "ATLAS_EMBEDDER"):
            env.pop(name, None)
        first, _ = _atlas(env, "ingest", str(data_file("sample", "scifact_sample.jsonl")), "--no-progress")
        _atlas(env, "ask", QUESTION)
        warm = [_atlas(env, "ask", QUESTION) for _ in range(args.runs)]
        floor = [_atlas(env, "brief", "show", "1") for _ in range(args.runs)]
        trial_env = {**env, "PREFECT_HOME": f"{folder}/prefect-fresh"}
        succeeded, seconds, failures = concurrent_first_commands(trial_env, args.concurrent)
        # the servers started above stop 60 s after their last command; from then on each command starts both
        cold_env = {**env, "ATLAS_IDLE_SECONDS": "0"}
        cold = [_cold(cold_env) for _ in range(args.runs)]
        while _servers_running(trial_env) or _servers_running(cold_env):
            time.sleep(0.5)
        time.sleep(1.0)
    reference = statistics.median(wall for wall, _ in cold)
    print(f"atlas ask on the demo corpus (ingest on a new home: {first:.0f} s), median of {args.runs} "
          f"(load {os.getloadavg()[0]:.1f})")
    print(f"{'':<62}{'median s':>9}{'min s':>8}{'x cold':>8}{'CPU s':>7}")
    for name, runs in (("warm: shared Prefect API and database running", warm),
                       ("cold: both started by the command (each command before)", cold),
                       ("no flow: atlas brief show (no Prefect imported)", floor)):
        walls, cpus = zip(*runs)
        print(f"{name:<62}{statistics.median(walls):>9.2f}{min(walls):>8.2f}"
              f"{statistics.median(walls) / reference:>8.2f}{statistics.median(cpus):>7.2f}")
    print(f"\n{args.concurrent} concurrent first commands (atlas ask) on a new Prefect home: {succeeded} of "
          f"{args.concurrent} succeeded, the last ended after {seconds:.0f} s")
    for failure in failures:
        print(f"  failed: {failure[:200]}")


if __name__ == "__main__":
    main()
