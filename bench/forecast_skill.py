"""Forecast skill of the lane's driver rule: `python -m bench.forecast_skill [--daily-every 5] [--timing-origins 1000]`.

1. Rolling-origin backtest (atlas.forecasting.backtest) of the new rule (v2) and the old one (v1)
   on every series file in ../shared/data/series/ that the issue names — CPIAUCSL and UNRATE
   (2026-03 download), FEDFUNDS (2025-04), DGS10 (daily, 1962–2021) and two columns of the
   quarterly statsmodels macro table (realgdp, unemp) — at a short, a medium and a long horizon,
   question "higher after h periods than at the origin" (`>`), seed 0. Columns: n, unresolvable,
   Brier of the rule, of the base rate alone and of p = 0.5, skill against both, ECE (10 bins).
   Targets (issue 11): skill vs base rate >= 0 where n >= 1,000 and >= -0.01 elsewhere; ECE <= 0.05
   where n >= 1,000.
2. Time of a 1,000-origin backtest on DGS10 (30d): median of 3 runs of each rule, v1 as the
   reference measured in the same run (target <= 10 s for v2).
"""

from __future__ import annotations

import argparse
import statistics
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


def print_skill_table(daily_every: int) -> None:
    """One markdown row per series × horizon × rule, printed as soon as it is measured."""
    print("| series | horizon (periods) | rule | n | unresolvable | Brier | Brier base rate | Brier p=0.5 | "
          "skill vs base rate | skill vs 0.5 | ECE | ECE base rate | target |\n" + "|" + "---|" * 13, flush=True)
    for name, column, horizons in FILES:
        series = read_series_file(SERIES_DIR / name, column)
        every = daily_every if series.frequency == "daily" else 1
        for horizon in horizons:
            h = horizon_periods(horizon, series.frequency)
            for rule in ("v1", "v2"):
                result = run_backtest(series, BacktestSpec(horizon=h, every=every, rule=rule))
                m = result.metrics
                label = name.split("__")[0].split("_1959")[0] + (f":{column}" if column else "")
                print(
                    f"| {label} | {horizon} ({h}) | {rule} | {m['n']} | {m['unresolvable']} | {m['brier']:.4f} | "
                    f"{m['brier_base_rate']:.4f} | {m['brier_half']:.4f} | {m['skill_vs_base_rate']:+.4f} | "
                    f"{m['skill_vs_half']:+.4f} | {m['ece']:.4f} | {m['ece_base_rate']:.4f} | "
                    f"{_target(m) if rule == 'v2' else ''} |", flush=True)


def timing(origins: int) -> list[str]:
    series = read_series_file(SERIES_DIR / FILES[3][0])
    h = horizon_periods("30d", series.frequency)
    every = max(1, (len(series.view.values) - h) // origins)
    rows = []
    for rule in ("v2", "v1"):
        runs = [run_backtest(series, BacktestSpec(horizon=h, every=every, rule=rule)) for _ in range(3)]
        rows.append((rule, len(runs[0].rows), statistics.median(r.seconds for r in runs)))
    lines = ["| rule | origins | median of 3 runs | target |", "|---|---|---|---|"]
    verdicts = {"v2": f"<= 10 s: {'PASS' if rows[0][2] <= 10 else 'FAIL'}", "v1": "reference"}
    lines += [f"| {rule} | {n} | {seconds:.2f} s | {verdicts[rule]} |" for rule, n, seconds in rows]
    lines.append(f"ratio v2 / v1: {rows[0][2] / rows[1][2]:.2f}×")
    return lines


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
