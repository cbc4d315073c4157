"""Issue 27's targets for unseen periods, on series nobody here chose anything on: `python -m bench.forecast_unseen`.

Issue 27 says the rules will be checked "on series periods you do not have", at 7d, 30d and 1q: skill vs
the whole-history base rate >= 0, vs a constant 0.5 >= -0.005, ECE <= 0.05. Every period of the shared
files has shaped some choice by now (DGS10 from 2015 included), so this bench reads other real series:
the data files the `arch` package ships (`pip install arch`; read as files, arch itself is never imported)
— S&P 500 and NASDAQ adjusted closes (daily, 1999–2018), WTI crude (daily, FRED DCOILWTICO, 1986–2019)
and Moody's AAA and BAA yields (monthly, 1919–2018). The protocol was written down before any rule saw
them (2026-12-02): question "higher after h than at the origin", every origin; daily series in 7-year
blocks from 7 years after their first row, at 7d, 30d and 1q; monthly in 20-year blocks from 1939, at 30d
(1 month) and 1q; rules v3, v4 (the lane's), v5 and v6; no rule or constant is changed on what it shows.
Issue 41 adds v7 to the same cells and section 4, under its own protocol (docs/forecasting-protocol-41.md), and v8
under a second one (docs/forecasting-protocol-41b.md).

1. Each block × horizon: skill vs base rate, vs 0.5 and ECE of each rule, and the targets.
2. The ceiling for the lane's kind of rule: in each daily cell, which of the rates v4 chooses among (the
   whole history, 0.5, the shrunk rolling windows of 1, 2, 5 and 10 years) meets the targets when it
   alone is published; a cell none of them meets is out of reach of any choice among them, even one made
   in hindsight. Tallied per horizon beside the rules' own counts.
3. The targets' noise at these horizons: how often a forecaster that knows the true probability exactly
   (0.5, on a driftless Gaussian random walk) shows ECE > 0.05, or loses to a base rate 0.02 off the truth,
   over a block of daily origins the length of a 7-year block and of DGS10's held-out period. Overlapping
   outcomes share their path, so a block holds about n / h independent ones.
4. Issue 41 (protocols docs/forecasting-protocol-41.md and -41b.md, each committed before its rule, v7 and v8,
   was run on these files): each daily cell's skill vs 0.5 and vs the base rate with their 90% block-bootstrap
   intervals, ECE beside the bound max(0.05, the floor's 90th percentile), for v3, v4, v7 and v8
   (`--issue-41-only --rules v8`: the named rules alone); then per horizon the Done-when tally — blocks
   with skill vs 0.5 >= -0.005 (7 of 8 needed), mean skill vs base rate (>= 0), blocks within the ECE bound
   (7 of 8, the protocol's reading; 8 of 8 shown beside it) — and the verdict.

`--design` prints section 4's tables on the data v8 was designed on instead (docs/forecasting-protocol-41b.md): the
US market's total-return index compounded from arch's monthly Fama–French file (Mkt-RF + RF, 7-year blocks from 1933
at 30d and 1q, every origin) and the shared DGS10 daily file (7-year blocks from 1969, every 5th origin).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import importlib.util
import io
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.forecast_skill import FILES, LANE, SERIES_DIR, _side_by_side, unseen_period_target
from forum_atlas.forecasting.backtest import (
    RULES,
    BacktestSpec,
    SeriesSource,
    calibrated_outcomes,
    horizon_periods,
    read_series_file,
    run_backtest,
    skill_metrics,
)
from forum_atlas.forecasting.drivers import SeriesView
from forum_atlas.series.parsing import infer_frequency

# (name, file under arch/data, column, horizons, block years, first block: a year, or None for 7 years in)
SERIES = [
    ("S&P 500", "sp500/sp500.csv.gz", "Adj Close", ("7d", "30d", "1q"), 7, None),
    ("NASDAQ", "nasdaq/nasdaq.csv.gz", "Adj Close", ("7d", "30d", "1q"), 7, None),
    ("WTI", "wti/wti.csv.gz", "DCOILWTICO", ("7d", "30d", "1q"), 7, None),
    ("AAA", "default/default.csv.gz", "AAA", ("30d", "1q"), 20, 1939),
    ("BAA", "default/default.csv.gz", "BAA", ("30d", "1q"), 20, 1939),
]
CANDIDATES = ("whole history", "0.5", "1 y", "2 y", "5 y", "10 y")  # the order of `candidate_passes`
ECE_TARGET = 0.05
COMPARED = ("v3", "v4", "v5", "v6", "v7", "v8")  # oldest first; v7, v8: issue 41's candidates
ISSUE_41_RULES = ("v3", "v4", "v7", "v8")
HALF_TARGET = -0.005     # issue 41: skill vs 0.5 at least this in ...
BLOCKS_NEEDED = 7        # ... at least 7 of the 8 daily blocks per horizon; the ECE bound likewise (the protocol)
DAILY_BLOCKS = 8
BLOCK_ORIGINS = {"7-year block": 1827, "DGS10 from 2015 (held out)": 1400}  # daily origins (261 a year)
BASE_RATE_OFFSET = 0.02  # a whole-history rate this far off the truth (ties alone take DGS10's 7d rate ~0.03 below)
DESIGN_DGS10_EVERY = 5   # --design: every 5th DGS10 origin (the market index is monthly: every origin)


def arch_data_dir() -> Path:
    spec = importlib.util.find_spec("arch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench.forecast_unseen reads the data files of the `arch` package: pip install arch")
    return Path(spec.submodule_search_locations[0]) / "data"


class DataFileError(ValueError):
    """A data file this bench reads is not a gzipped `Date,...` CSV with the expected column (line 0: the file)."""

    def __init__(self, path: Path, line: int, what: str):
        super().__init__(f"{path}, line {line}: {what}" if line else f"{path}: {what}")


def read_gz_series(path: Path, column: str, name: str) -> SeriesSource:
    """One column of a gzipped `Date,...` CSV (dates M/D/YYYY), rows without a value skipped. A file that is
    not one (truncated, not gzip, not UTF-8, not CSV, no such column, a bad date or number) is refused with
    DataFileError naming the line."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise DataFileError(path, 0, f"not a readable gzipped UTF-8 CSV ({error})") from None
    reader = csv.DictReader(io.StringIO(text))
    try:
        if not {"Date", column} <= set(reader.fieldnames or ()):
            raise DataFileError(path, 1, f"the header has no Date and {column} columns")
        return _series(path, column, name, [(line, row) for line, row in enumerate(reader, start=2)])
    except csv.Error as error:
        raise DataFileError(path, reader.line_num + 1, f"not CSV ({error})") from None  # the line being read


def _series(path: Path, column: str, name: str, rows: list[tuple[int, dict]]) -> SeriesSource:
    kept = []
    for line, row in rows:
        value = (row[column] or "").strip()
        if value in ("", "."):
            continue
        try:
            day, number = datetime.strptime(row["Date"] or "", "%m/%d/%Y").date(), float(value)
        except ValueError:
            raise DataFileError(path, line, f"{(row['Date'] or '')[:40]!r}, {value[:40]!r} is not a M/D/YYYY date "
                                            "and a number") from None
        if not np.isfinite(number):
            raise DataFileError(path, line, f"{value[:40]!r} is not a finite number")
        kept.append((day, number))
    view = SeriesView(np.array([day for day, _ in kept], dtype="datetime64[D]"),
                      np.array([value for _, value in kept], dtype=np.float64))
    return SeriesSource(name, infer_frequency(view.dates), view, f"arch data {path.parent.name}/{path.name} {column}")


def blocks(series: SeriesSource, years: int, first_year: int | None) -> Iterator[tuple[date, date]]:
    """Consecutive `years`-year blocks of origins [start, end), the last cut at the file's end."""
    last = series.view.dates[-1].astype(date)
    start = date(first_year or series.view.dates[0].astype(date).year + 7, 1, 1)
    while start <= last:
        end = date(start.year + years, 1, 1)
        yield start, min(end, last + timedelta(days=1))
        start = end


def read_market_index(path: Path) -> SeriesSource:
    """The market's total-return index from a gzipped Fama–French monthly file (`Date` YYYYMM, `Mkt-RF` and `RF` in
    percent): 100 compounded by Mkt-RF + RF each month. Refused with DataFileError naming the line otherwise."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            reader = csv.DictReader(io.StringIO(handle.read()))
        if not {"Date", "Mkt-RF", "RF"} <= set(reader.fieldnames or ()):
            raise DataFileError(path, 1, "the header has no Date, Mkt-RF and RF columns")
        days, returns = [], []
        for line, row in enumerate(reader, start=2):
            text = row["Date"] or ""
            try:
                if len(text) != 6:
                    raise ValueError(text)
                days.append(date(int(text[:4]), int(text[4:]), 1))
                returns.append((float(row["Mkt-RF"]) + float(row["RF"])) / 100.0)
            except (TypeError, ValueError):
                raise DataFileError(path, line, f"{text[:40]!r} is not a YYYYMM month with two numbers") from None
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as error:
        raise DataFileError(path, 0, f"not a readable gzipped UTF-8 CSV ({error})") from None
    if not np.all(np.isfinite(returns)) or min(returns, default=0.0) <= -1.0:
        raise DataFileError(path, 0, "a return is not a finite number above -100%")
    view = SeriesView(np.array(days, dtype="datetime64[D]"), 100.0 * np.cumprod(1.0 + np.array(returns)))
    return SeriesSource("US market index", infer_frequency(view.dates), view, f"arch data {path.name} Mkt-RF + RF")


def design_cells(data_dir: Path, rules: tuple[str, ...]) -> list[tuple[str, date, date, str, dict[str, dict]]]:
    """--design: the cells v8 was chosen on (never the evaluation series), with each rule's backtest metrics."""
    cells = []
    for series, horizons, every in (
            (read_market_index(data_dir / "frenchdata" / "frenchdata.csv.gz"), ("30d", "1q"), 1),
            (read_series_file(SERIES_DIR / FILES[3][0]), ("7d", "30d", "1q"), DESIGN_DGS10_EVERY)):
        for start, end in blocks(series, 7, None):
            for horizon in horizons:
                spec = BacktestSpec(horizon=horizon_periods(horizon, series.frequency), every=every, start=start,
                                    end=end - timedelta(days=1))
                cells.append((series.series_id, start, end - timedelta(days=1), horizon,
                              {rule: run_backtest(series, replace(spec, rule=rule)).metrics for rule in rules}))
    return cells


def _cells(data_dir: Path) -> Iterator[tuple[SeriesSource, date, date, str, int]]:
    for name, file, column, horizons, years, first_year in SERIES:
        series = read_gz_series(data_dir / file, column, name)
        for start, end in blocks(series, years, first_year):
            for horizon in horizons:
                yield series, start, end, horizon, horizon_periods(horizon, series.frequency)


def candidate_passes(base_rate: np.ndarray, window_rates: np.ndarray, outcome: np.ndarray) -> list[bool]:
    """For each of CANDIDATES published alone at every origin: does it meet the unseen-period targets?"""
    return [unseen_period_target(skill_metrics(rate, base_rate, outcome, window_rates), 0) == "PASS"
            for rate in (base_rate, np.full(len(outcome), 0.5), *window_rates.T)]


def exact_forecaster_shares(horizon: int, origins: int, draws: int) -> np.ndarray:
    """The share of yes among `origins` consecutive origins at `horizon`, in each of `draws` blocks whose
    outcomes are exactly as likely as 0.5 says (the backtest's `calibrated_outcomes`: a shared random walk)."""
    return calibrated_outcomes(np.full(origins, 0.5), np.arange(origins), horizon, draws).mean(axis=1)


def exact_forecaster_misses(shares: np.ndarray, base_rate_offset: float) -> tuple[float, float]:
    """How often the forecaster that says the true 0.5 shows ECE > ECE_TARGET (one bin: |share - 0.5|), and how
    often it loses to a base rate `base_rate_offset` below 0.5 (Brier: when the share falls below their midpoint)."""
    return (float(np.mean(np.abs(shares - 0.5) > ECE_TARGET)),
            float(np.mean(shares < 0.5 - base_rate_offset / 2)))


def print_ece_noise(horizons: dict[str, int], draws: int) -> None:
    print(f"\nThe forecaster that knows the true probability (0.5, driftless random walk, {draws:,} simulated blocks): "
          f"share of blocks with ECE > {ECE_TARGET} / losing to a base rate {BASE_RATE_OFFSET} below 0.5\n\n"
          f"| block | origins | {' | '.join(horizons)} |\n|---|---|" + "---|" * len(horizons))
    for label, origins in BLOCK_ORIGINS.items():
        misses = [exact_forecaster_misses(exact_forecaster_shares(h, origins, draws), BASE_RATE_OFFSET)
                  for h in horizons.values()]
        print(f"| {label} | {origins:,} | {' | '.join(f'{ece:.0%} / {loses:.0%}' for ece, loses in misses)} |")


def issue_41_tally(cells: list[dict]) -> dict:
    """One rule's daily cells at one horizon (backtest metrics) against issue 41's Done-when, read as the protocol
    says: skill vs 0.5 >= HALF_TARGET in at least BLOCKS_NEEDED blocks, mean skill vs base rate >= 0, and the ECE
    within its bound (`calibrated`) in at least BLOCKS_NEEDED blocks; `strict` also asks the bound in every block.
    Other than 8 blocks (--design), the same share of them: BLOCKS_NEEDED / DAILY_BLOCKS, rounded up."""
    half = sum(m["skill_vs_half"] >= HALF_TARGET for m in cells)
    base = float(np.mean([m["skill_vs_base_rate"] for m in cells]))
    calibrated = sum(bool(m["calibrated"]) for m in cells)
    need = math.ceil(BLOCKS_NEEDED * len(cells) / DAILY_BLOCKS)
    met = half >= need and base >= 0 and calibrated >= need
    return {"blocks": len(cells), "half": half, "mean_vs_base_rate": base, "calibrated": calibrated,
            "met": met, "strict": met and calibrated == len(cells)}


def _interval(m: dict, key: str) -> str:
    return f"{m[key]:+.4f} [{m[key + '_low']:+.4f}, {m[key + '_high']:+.4f}]"


def print_issue_41(daily: list[tuple[str, date, date, str, dict[str, dict]]],
                   rules: tuple[str, ...] = ISSUE_41_RULES, per_series: bool = False) -> None:
    """The cells, then the Done-when tally per horizon over all the series' blocks (issue 41's 8 daily blocks), or
    per series and horizon (`per_series`: --design, whose series are unlike each other)."""
    print("\nIssue 41, each daily cell: skill [90% block-bootstrap interval], ECE against max(0.05, floor p90)\n\n"
          "| series | origins from | to | horizon | rule | skill vs 0.5 | skill vs base rate | ECE | floor p90 | "
          "within bound |\n|---|---|---|---|---|---|---|---|---|---|")
    for name, start, end, horizon, runs in daily:
        for rule in rules:
            m = runs[rule]
            print(f"| {name} | {start} | {end} | {horizon} | {rule} | {_interval(m, 'skill_vs_half')} | "
                  f"{_interval(m, 'skill_vs_base_rate')} | {m['ece']:.4f} | {m['ece_if_calibrated_p90']:.4f} | "
                  f"{'yes' if m['calibrated'] else 'NO'} |")

    def group(name: str) -> str:
        return name if per_series else ", ".join(dict.fromkeys(cell[0] for cell in daily))
    tallies = list(dict.fromkeys((group(cell[0]), cell[3]) for cell in daily))
    print(f"\nIssue 41's Done-when per horizon: blocks with skill vs 0.5 >= {HALF_TARGET} (need {BLOCKS_NEEDED}); "
          f"mean skill vs base rate (need >= 0); blocks within the ECE bound (need {BLOCKS_NEEDED}; all of them for "
          f"the strict reading)\n\n| rule | series | horizon | vs 0.5 | mean vs base rate | ECE within bound | met | "
          f"met, strict |\n|---|---|---|---|---|---|---|---|")
    for rule in rules:
        for series, horizon in tallies:
            t = issue_41_tally([runs[rule] for name, *_, hz, runs in daily if (group(name), hz) == (series, horizon)])
            print(f"| {rule} | {series} | {horizon} | {t['half']} of {t['blocks']} | {t['mean_vs_base_rate']:+.4f} | "
                  f"{t['calibrated']} of {t['blocks']} | {'yes' if t['met'] else 'NO'} | "
                  f"{'yes' if t['strict'] else 'NO'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000, help="simulated blocks per cell of section 3")
    parser.add_argument("--issue-41-only", action="store_true", help=f"section 4 alone ({', '.join(ISSUE_41_RULES)} "
                                                                      "on the daily cells)")
    parser.add_argument("--rules", type=lambda text: tuple(text.split(",")), default=ISSUE_41_RULES,
                        help="with --issue-41-only or --design: these rules only, comma-separated (e.g. v8)")
    parser.add_argument("--design", action="store_true", help="section 4's tables on v8's design data, per series")
    args = parser.parse_args()
    if unknown := [rule for rule in args.rules if rule not in RULES]:
        parser.error(f"--rules: {', '.join(unknown)} not among {', '.join(RULES)}")
    data_dir = arch_data_dir()
    try:
        if args.design:
            print_issue_41(design_cells(data_dir, args.rules), args.rules, per_series=True)
        elif args.issue_41_only:
            print_issue_41(daily_cells(data_dir, args.rules), args.rules)
        else:
            run(data_dir, args.draws)
    except DataFileError as error:
        raise SystemExit(f"bench.forecast_unseen: {error}") from None


def daily_cells(data_dir: Path, rules: tuple[str, ...]) -> list[tuple[str, date, date, str, dict[str, dict]]]:
    """The daily cells (series, first and last origin, horizon) with each rule's backtest metrics."""
    cells = []
    for series, start, end, horizon, h in _cells(data_dir):
        if series.frequency == "daily":
            spec = BacktestSpec(horizon=h, start=start, end=end - timedelta(days=1))
            cells.append((series.series_id, start, end - timedelta(days=1), horizon,
                          {rule: run_backtest(series, replace(spec, rule=rule)).metrics for rule in rules}))
    return cells


def run(data_dir: Path, draws: int) -> None:
    arrow = " → ".join(COMPARED)
    print(f"| series | origins from | to | horizon | n | skill vs base rate {arrow} | skill vs 0.5 {arrow} | "
          f"ECE {arrow} | ECE if calibrated ({LANE}) | {' | '.join(f'targets, {rule}' for rule in COMPARED)} | "
          f"candidates meeting them ({', '.join(CANDIDATES)}) |\n|" + "---|" * (10 + len(COMPARED)), flush=True)
    met: Counter[tuple[str, str]] = Counter()
    cells: Counter[str] = Counter()
    daily_periods: dict[str, int] = {}
    daily: list[tuple[str, date, date, str, dict[str, dict]]] = []
    for series, start, end, horizon, h in _cells(data_dir):
        spec = BacktestSpec(horizon=h, start=start, end=end - timedelta(days=1))
        results = {rule: run_backtest(series, replace(spec, rule=rule)) for rule in COMPARED}
        runs = {rule: result.metrics for rule, result in results.items()}
        rows = [row for row in results[COMPARED[0]].rows if row.outcome is not None]
        outcome = np.array([row.outcome for row in rows], dtype=np.float64)
        candidates = candidate_passes(np.array([row.base_rate for row in rows]),
                                      np.array([row.window_rates for row in rows]), outcome)
        targets = {rule: unseen_period_target(m, 0) for rule, m in runs.items()}
        if series.frequency == "daily":
            daily_periods[horizon] = h
            cells[horizon] += 1
            met.update((rule, horizon) for rule, verdict in targets.items() if verdict == "PASS")
            met[("any candidate", horizon)] += any(candidates)
            daily.append((series.series_id, start, end - timedelta(days=1), horizon, runs))
        print(f"| {series.series_id} | {start} | {end - timedelta(days=1)} | {horizon} ({h}) | {runs[LANE]['n']} | "
              f"{_side_by_side(runs, 'skill_vs_base_rate', '+.4f')} | {_side_by_side(runs, 'skill_vs_half', '+.4f')} | "
              f"{_side_by_side(runs, 'ece', '.4f')} | {runs[LANE]['ece_if_calibrated']:.4f} | "
              f"{' | '.join(targets.values())} | {' '.join('yes' if ok else '—' for ok in candidates)} |", flush=True)
    horizons = list(cells)
    print(f"\nDaily cells meeting every unseen-period target, per horizon ({', '.join(horizons)}):\n\n"
          f"| rule | {' | '.join(horizons)} | all |\n|---|" + "---|" * (len(horizons) + 1))
    for who in (*COMPARED, "any candidate"):
        counts = [met[(who, horizon)] for horizon in horizons]
        label = "any candidate, chosen per cell in hindsight" if who == "any candidate" else who
        print(f"| {label} | {' | '.join(f'{c} of {cells[hz]}' for c, hz in zip(counts, horizons))} | "
              f"{sum(counts)} of {sum(cells.values())} |")

    print_ece_noise(daily_periods, draws)
    print_issue_41(daily)


if __name__ == "__main__":
    main()
