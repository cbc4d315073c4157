"""Forecast skill of the lane's driver rule: `python -m bench.forecast_skill [--daily-every 5] [--timing-origins 1000]`.

1. Rolling-origin backtest (atlas.forecasting.backtest) of the lane's rule (v3) beside the rules it
   replaced (v2, v1) on every series file in ../shared/data/series/ that the issue names — CPIAUCSL
   and UNRATE (2026-03 download), FEDFUNDS (2025-04), DGS10 (daily, 1962–2021) and two columns of the
   quarterly statsmodels macro table (realgdp, unemp) — at a short, a medium and a long horizon,
   question "higher after h periods than at the origin" (`>`), seed 0. One row per file × horizon:
   n (of v3), unresolvable, Brier of each rule, of the base rate alone (v3's origins) and of p = 0.5,
   skill against the base rate per rule, skill of v3 against p = 0.5, ECE (10 bins) per rule and of
   the base rate. Targets (issue 11), checked on v3: skill vs base rate >= 0 where n >= 1,000 and
   >= -0.01 elsewhere; ECE <= 0.05 where n >= 1,000.
2. Time of a 1,000-origin backtest on DGS10 (30d): median of 3 runs of each rule (wall clock, and
   the CPU time this process used, which other work on the machine does not inflate), v1 as the
   reference measured in the same run (target <= 10 s for v3); the load average is printed with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from forum_atlas.forecasting.backtest import BacktestSpec, horizon_periods, read_series_file, run_backtest

SERIES_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "series"
FILES = [  # (file, column of a year/quarter table, horizons short/medium/long)
    ("CPIAUCSL__fred_vintage_2026-03.csv", None, ("1", "3", "12")),
    ("UNRATE__fred_vintage_2026-03.csv", None, ("1", "3", "12")),
    ("FEDFUNDS__fred_vintage_2025-04.csv", None, ("1", "3", "12")),
    ("DGS10__fred_daily_1962-2021_oldformat.csv", None, ("7d", "30d", "1q")),
    ("statsmodels_macrodata_1959Q1-2009Q3.csv", "realgdp", ("1", "4", "8")),
    ("statsmodels_macrodata_1959Q1-2009Q3.csv", "unemp", ("1", "4", "8")),
]


def _target(m: dict) -> str:
    if m["n"] == 0:
        return "n/a"
    large = m["n"] >= 1000
    ok = m["skill_vs_base_rate"] is not None and m["skill_vs_base_rate"] >= (0.0 if large else -0.01)
    if large:
        ok = ok and m["ece"] <= 0.05
    return "PASS" if ok else "FAIL"


COMPARED = ("v1", "v2", "v3")  # oldest first; the last is the lane's rule, checked against the targets


def _label(name: str, column: str | None) -> str:
    return name.split("__")[0].split("_1959")[0] + (f":{column}" if column else "")


def print_skill_table(daily_every: int) -> None:
    """One markdown row per series × horizon, all rules side by side, printed as soon as it is measured."""
    arrow = " → ".join(COMPARED)
    print(f"| series | horizon (periods) | n (unresolvable) | Brier {arrow} | Brier base rate | Brier p = 0.5 | "
          f"skill vs base rate {arrow} | skill vs p = 0.5, {COMPARED[-1]} | ECE {arrow} | ECE base rate | target |\n"
          + "|" + "---|" * 11, flush=True)
    for name, column, horizons in FILES:
        series = read_series_file(SERIES_DIR / name, column)
        every = daily_every if series.frequency == "daily" else 1
        for horizon in horizons:
            h = horizon_periods(horizon, series.frequency)
            runs = [run_backtest(series, BacktestSpec(horizon=h, every=every, rule=rule)).metrics for rule in COMPARED]
            m = runs[-1]
            print(f"| {_label(name, column)} | {horizon} ({h}) | {m['n']} ({m['unresolvable']}) | "
                  f"{_side_by_side(runs, 'brier', '.4f', bold=False)} | {m['brier_base_rate']:.4f} | "
                  f"{m['brier_half']:.4f} | {_side_by_side(runs, 'skill_vs_base_rate', '+.4f')} | "
                  f"{m['skill_vs_half']:+.4f} | {_side_by_side(runs, 'ece', '.4f')} | {m['ece_base_rate']:.4f} | "
                  f"{_target(m)} |", flush=True)


def _side_by_side(runs: list[dict], key: str, spec: str, bold: bool = True) -> str:
    cells = [format(r[key], spec) for r in runs]
    if bold:
        cells[-1] = f"**{cells[-1]}**"
    return " → ".join(cells)


def timing(origins: int) -> list[str]:
    load_before = _load()
    series = read_series_file(SERIES_DIR / FILES[3][0])
    h = horizon_periods("30d", series.frequency)
    every = max(1, (len(series.view.values) - h) // origins)
    rows = []
    for rule in reversed(COMPARED):
        wall, cpu = [], []
        for _ in range(3):
            started = time.process_time()
            result = run_backtest(series, BacktestSpec(horizon=h, every=every, rule=rule))
            cpu.append(time.process_time() - started)
            wall.append(result.seconds)
        rows.append((rule, len(result.rows), statistics.median(wall), statistics.median(cpu)))
    reference = rows[-1][2]
    lines = [f"load average (1, 5, 15 min) before: {load_before}; after: {_load()}", "",
             "| rule | origins | median of 3 runs (wall) | CPU time of this process | vs v1 (wall) | target |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {rule} | {n} | {seconds:.2f} s | {cpu:.2f} s | {seconds / reference:.2f}× | "
              f"{('<= 10 s: ' + ('PASS' if seconds <= 10 else 'FAIL')) if rule == COMPARED[-1] else ''} |"
              for rule, n, seconds, cpu in rows]
    return lines


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--daily-every", type=int, default=5, help="origin spacing on the daily series")
    parser.add_argument("--timing-origins", type=int, default=1000)
    args = parser.parse_args()
    print_skill_table(args.daily_every)
    print()
    print("\n".join(timing(args.timing_origins)))


if __name__ == "__main__":
    main()
