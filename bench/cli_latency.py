"""What a CLI command that runs a flow waits for, and whether first commands can start together (issue 25, item 2).

    python -m bench.cli_latency [--runs 10] [--concurrent 10] [--background-load N]

On the demo corpus (the bundled SciFact sample, ingested once with the default embedder into a new data
directory), each row runs `atlas ask` as a fresh process, one after another:
- "warm": the command's flow runner (runtime/flow_runner.py: the flows imported, the embedder loaded), the
  shared Prefect API of the Prefect home and the embedded PostgreSQL are running (each kept for
  ATLAS_IDLE_SECONDS, here 60, after a command), so the command only sends its question and prints the brief;
- "warm, flow in the command": the same with ATLAS_FLOW_RUNNER=off: the command imports Prefect and the flows,
  loads the embedder and runs the flow itself, joining the running API and database (the design before the
  runner);
- "cold" (the reference, what every command paid when each started a temporary Prefect server of its own):
  nothing runs (ATLAS_IDLE_SECONDS=0, and the bench waits until all have stopped), so the command starts the
  runner, the API and the database;
- "no flow": `atlas brief show` in the same environment, a command that imports no Prefect and runs no flow: the
  floor of a fresh process that opens the database.
"CPU s" is the command's own CPU time (the servers' is not in it), steadier than wall time on a busy machine;
"runner CPU s" is what the flow runner spent per command (the flow's work, now outside the command).
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

from bench.report import load_line, table
from forum_atlas.resources import data_file

QUESTION = "Does vitamin D supplementation reduce the risk of fractures?"
IDLE_SECONDS = 60


def _atlas(env: dict[str, str], *args: str) -> tuple[float, float, float, float]:
    """(wall seconds, CPU seconds of the command and the processes it waited for — not the servers it joined —,
    CPU seconds of the flow runners of its Prefect home meanwhile, the 1-minute load when it ended)."""
    started, cpu, runner_cpu = time.perf_counter(), _children_cpu(), _runners_cpu(env)
    done = subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"atlas {' '.join(args)} failed: {done.stderr[-2000:]}")
    return (time.perf_counter() - started, _children_cpu() - cpu, max(0.0, _runners_cpu(env) - runner_cpu),
            os.getloadavg()[0])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _runners_cpu(env: dict[str, str]) -> float:
    """CPU seconds so far of the running flow runners whose socket is in this environment's Prefect home (one
    that starts or stops during a command is counted in part: the warm rows have neither)."""
    home, total = env["PREFECT_HOME"].encode(), 0.0
    for entry in Path("/proc").iterdir():
        try:
            if b"forum_atlas.runtime.flow_runner" in (entry / "cmdline").read_bytes() and \
                    home in (entry / "cmdline").read_bytes():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


def _servers_running(env: dict[str, str]) -> bool:
    home = Path(env["PREFECT_HOME"])
    return (home / "atlas-api.json").exists() or any(home.glob("atlas-runner-*.sock")) or \
        (Path(env["ATLAS_DATA_DIR"]) / "pgdata" / "postmaster.pid").exists()


def _cold(env: dict[str, str]) -> tuple[float, float, float, float]:
    # the runners stop after their idle period, and the database with the last of them (runtime/flow_runner.py)
    limit = 2 * IDLE_SECONDS + 60
    deadline = time.monotonic() + limit
    while _servers_running(env):
        assert time.monotonic() < deadline, f"the servers did not stop within {limit} s of idleness"
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


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=10)
    parser.add_argument("--background-load", type=int, default=0, metavar="N",
                        help="N busy processes beside the commands (the load column says what they added up to)")
    args = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.background_load)]
    try:
        _measure(args)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-cli-") as folder:
        env = {**os.environ, "ATLAS_DATA_DIR": f"{folder}/data", "PREFECT_HOME": f"{folder}/prefect",
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
               "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180", "ATLAS_IDLE_SECONDS": str(IDLE_SECONDS)}
        for name in ("ATLAS_DATABASE_URL", "PREFECT_API_URL", "ATLAS_EMBEDDER", "ATLAS_FLOW_RUNNER"):
            env.pop(name, None)
        first = _atlas(env, "ingest", str(data_file("sample", "scifact_sample.jsonl")), "--no-progress")[0]
        in_command_env = {**env, "ATLAS_FLOW_RUNNER": "off"}
        _atlas(env, "ask", QUESTION)
        _atlas(in_command_env, "ask", QUESTION)
        # interleaved, so that both rows see the same load
        pairs = [(_atlas(env, "ask", QUESTION), _atlas(in_command_env, "ask", QUESTION)) for _ in range(args.runs)]
        warm, in_command = [w for w, _ in pairs], [c for _, c in pairs]
        floor = [_atlas(env, "brief", "show", "1") for _ in range(args.runs)]
        trial_env = {**env, "PREFECT_HOME": f"{folder}/prefect-fresh"}
        succeeded, seconds, failures = concurrent_first_commands(trial_env, args.concurrent)
        # the servers started above stop after their idle period; from then on each command starts all
        cold_env = {**env, "ATLAS_IDLE_SECONDS": "0"}
        cold = [_cold(cold_env) for _ in range(args.runs)]
        while _servers_running(trial_env) or _servers_running(cold_env):
            time.sleep(0.5)
        time.sleep(1.0)
    reference = statistics.median(run[0] for run in cold)
    print(f"atlas ask on the demo corpus (ingest on a new home: {first:.0f} s), {args.runs} runs per row; "
          f"{load_line()} at the end")
    rows = []
    for name, runs in (("warm: flow runner, Prefect API and database running", warm),
                       ("warm, flow in the command (ATLAS_FLOW_RUNNER=off)", in_command),
                       ("cold: runner, API and database started by the command", cold),
                       ("no flow: atlas brief show (no Prefect imported)", floor)):
        walls, cpus, runner_cpus, loads = (list(column) for column in zip(*runs))
        rows.append((name, f"{statistics.median(walls):.2f}", f"{_p95(walls):.2f}", f"{min(walls):.2f}",
                     f"{statistics.median(walls) / reference:.2f}", f"{statistics.median(cpus):.2f}",
                     f"{statistics.median(runner_cpus):.2f}", f"{statistics.median(loads):.1f}"))
    print(table(["atlas ask", "median s", "p95 s", "min s", "x cold", "CPU s", "runner CPU s", "load"], rows))
    print(f"\n{args.concurrent} concurrent first commands (atlas ask) on a new Prefect home: {succeeded} of "
          f"{args.concurrent} succeeded, the last ended after {seconds:.0f} s")
    for failure in failures:
        print(f"  failed: {failure[:200]}")


if __name__ == "__main__":
    main()
