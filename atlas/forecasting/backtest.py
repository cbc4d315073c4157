"""Rolling-origin backtest of the lane's driver rule on one series vintage (issue 11).

At each origin t (every K-th published observation) the rule sees only the rows dated on or before
t — v1 and v2 get the arrays cut at t; v3 reads a history in which every row was computed from the
rows up to it (tests plant a future value and check nothing before it moves) — and forecasts "will
the value h periods after t be <cmp> the value at t" (or a fixed threshold) through the same `make_forecast` the lane
uses, with a seed derived from the run's seed and the origin, so the same command prints the same
numbers. Each question is resolved on the same file: an empty target is counted as unresolvable,
never filled. A single vintage cannot reproduce real-time revisions: every origin sees today's
revised values of its past, not what was published then.

Skill is reported against three references at the same origins (issue 27): the whole-history base
rate (every rule's recorded base rate), a constant 0.5, and the best fixed rolling window chosen in
hindsight (the rolling rates of `adaptive.py`, the window picked on the scored outcomes themselves,
so no rule can choose it in advance); ECE with its bins, beside the ECE the same forecasts would show
if they were perfectly calibrated (a few hundred origins spread over several bins show an ECE of
several hundredths from outcome noise alone, and origins closer than the horizon share their path, so
~1,800 daily origins at one quarter hold ~28 independent outcomes: a cell's ECE is read against that
floor); and
skill and ECE over the last third of the origins alone, where a regime change is not diluted by the
older origins.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from statistics import NormalDist
from time import perf_counter

import numpy as np

from forum_atlas.forecasting.adaptive import (
    ADAPTIVE_RULE_VERSION,
    ROLLING_WINDOWS_YEARS,
    AdaptiveRule,
    rolling_window_name,
)
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.confident import CONFIDENT_RULE_VERSION, ConfidentRule
from forum_atlas.forecasting.drivers import (
    LEGACY_RULE_VERSION,
    PERIODS_PER_YEAR,
    RULE_VERSION,
    SHRUNK_RULE_VERSION,
    DriftRule,
    SeriesView,
    legacy_drivers_for,
    shrunk_drivers_for,
)
from forum_atlas.forecasting.earned import EARNED_RULE_VERSION, EarnedRule
from forum_atlas.forecasting.forecast import make_forecast
from forum_atlas.forecasting.montecarlo import ForecastInputError
from forum_atlas.forecasting.stable import STABLE_RULE_VERSION, StableRule
from forum_atlas.forecasting.widened import WIDENED_RULE_VERSION, WidenedRule
from forum_atlas.scoring.metrics import (
    REPORT_BINS,
    accuracy_metrics,
    expected_calibration_error,
    skill,
)
from forum_atlas.scoring.reliability import reliability_png
from forum_atlas.scoring.rules import brier
from forum_atlas.scoring.resolution import COMPARATORS, check_comparator
from forum_atlas.series.parsing import infer_frequency, parse_fred_csv, parse_year_quarter_csv

REVISIONS_NOTE = ("One vintage cannot reproduce real-time revisions: each origin sees the file's (revised) "
                  "values of its past, not what was published at the time.")
FLOOR_NOTE = ("ece_if_calibrated is the ECE these forecasts would show if each were exactly right, origins closer "
              "than the horizon sharing their path: the noise floor a cell's ECE is read against (daily origins at "
              "one quarter hold about one independent outcome per quarter); ece_if_calibrated_p90 is its 90th "
              "percentile over the draws, and 'calibrated' means ECE <= ece_bound = max(0.05, that percentile).")
BOOTSTRAP_NOTE = ("skill_vs_half_low/high and skill_vs_base_rate_low/high: 90% moving-block bootstrap interval "
                  "(blocks of bootstrap_block_origins consecutive origins, about one horizon, so outcomes that share "
                  "their path are resampled together).")


def _per_origin(rule):
    """A rule that recomputes everything from the rows up to each origin."""
    return lambda view, frequency: lambda t, question: rule(view.upto(t), question, frequency)


# --rule name → (version recorded with the forecasts, rule(view, frequency) → answer(t, question) as of row t,
# (base rate, drivers, …)). v8 and v7 (issue 41), v4 (the lane's), v5 and v6 (issue 27's candidates, not adopted)
# and v3 read a history computed once per question shape, each row from rows up to it only.
RULES = {"v8": (CONFIDENT_RULE_VERSION, ConfidentRule), "v7": (EARNED_RULE_VERSION, EarnedRule),
         "v6": (STABLE_RULE_VERSION, StableRule), "v5": (WIDENED_RULE_VERSION, WidenedRule),
         "v4": (ADAPTIVE_RULE_VERSION, AdaptiveRule),
         "v3": (RULE_VERSION, DriftRule),
         "v2": (SHRUNK_RULE_VERSION, _per_origin(shrunk_drivers_for)),
         "v1": (LEGACY_RULE_VERSION, _per_origin(lambda view, question, _: legacy_drivers_for(view, question)))}
DEFAULT_TABLE_COLUMN = "realgdp"  # of a year/quarter table such as the statsmodels macro data
_HORIZON = re.compile(r"^(\d+)([dmq]?)$")
_DAYS_PER_YEAR = 365.25
_UNIT_PER_YEAR = {"d": _DAYS_PER_YEAR, "m": 12.0, "q": 4.0}


def horizon_periods(text: str, frequency: str) -> int:
    """'30d', '1m', '1q' or a bare N (the series' own periods) → periods of a `frequency` series:
    a daily series has 261 business days a year, so 30d → 21, 1m → 22, 1q → 65."""
    match = _HORIZON.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"horizon {text!r} is not 30d, 1m, 1q or a positive number of periods")
    count, unit = int(match.group(1)), match.group(2)
    if not unit:
        return count
    periods = round(count * PERIODS_PER_YEAR[frequency] / _UNIT_PER_YEAR[unit])
    if periods < 1:
        raise ValueError(f"horizon {text!r} is shorter than one period of a {frequency} series")
    return periods


@dataclass(frozen=True)
class SeriesSource:
    series_id: str
    frequency: str
    view: SeriesView
    label: str


def read_series_file(path: Path, column: str | None = None) -> SeriesSource:
    """A FRED CSV export (either format), or one column of a quarterly `year,quarter,...` table
    (default realgdp); the frequency is read off the dates."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip("\ufeff").startswith(('"year"', "year")):
        column = column or DEFAULT_TABLE_COLUMN
        parsed = parse_year_quarter_csv(text, column, source=str(path))
        label = f"{path.name} column {column}"
    else:
        parsed = parse_fred_csv(text, source=str(path))
        label = path.name
    view = SeriesView.of(parsed.observations)
    return SeriesSource(parsed.series_id, infer_frequency(view.dates), view, label)


@dataclass(frozen=True)
class BacktestSpec:
    horizon: int                       # periods of the series
    every: int = 1                     # an origin every K-th published observation
    start: date | None = None          # first origin date (inclusive)
    end: date | None = None            # last origin date (inclusive)
    comparator: str = ">"
    threshold: float | None = None     # None: against the value at the origin
    rule: str = "v4"
    seed: int = 0
    confidence_target: float = 0.9

    def __post_init__(self) -> None:
        check_comparator(self.comparator)
        if self.horizon < 1 or self.every < 1:
            raise ValueError("horizon and every must be at least 1")
        if self.rule not in RULES:
            raise ValueError(f"rule {self.rule!r} is not one of {', '.join(RULES)}")


@dataclass(frozen=True)
class BacktestRow:
    origin: date
    target: date
    probability: float
    base_rate: float        # the whole-history rate at the origin (every rule records it as its base rate)
    outcome: int | None     # None: the target row is empty in the file — unresolvable, never filled
    window_rates: tuple[float, ...]  # the ROLLING_WINDOWS_YEARS rates at the origin (the hindsight reference)
    basis: str | None = None  # v4 to v8: the base-rate candidates the forecast rested on
    rule_probability: float | None = None  # v4 to v8: its probability before Monte-Carlo sampling


@dataclass
class BacktestResult:
    series_id: str
    frequency: str
    source: str
    spec: BacktestSpec
    rule_version: str
    rows: list[BacktestRow]
    skipped_origins: int                # too little history before them for the rule
    seconds: float
    metrics: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=lambda: [REVISIONS_NOTE, FLOOR_NOTE, BOOTSTRAP_NOTE])

    def summary(self) -> dict:
        return {"series": self.series_id, "frequency": self.frequency, "source": self.source,
                "rule": self.rule_version, "horizon_periods": self.spec.horizon, "every": self.spec.every,
                "comparator": self.spec.comparator,
                "against": "origin value" if self.spec.threshold is None else self.spec.threshold,
                "origins": len(self.rows), "skipped_origins": self.skipped_origins, **self.metrics}

    def as_dict(self) -> dict:
        data = {"summary": self.summary(), "spec": asdict(self.spec), "notes": self.notes, "seconds": self.seconds,
                "rows": [asdict(r) for r in self.rows]}
        return json.loads(json.dumps(data, default=str))

    def markdown(self) -> str:
        m = self.metrics
        question = (f"Source {self.source}; horizon {self.spec.horizon} periods; origin every {self.spec.every} "
                    f"published observation(s); question: value at target {self.spec.comparator} "
                    f"{'value at origin' if self.spec.threshold is None else self.spec.threshold}.")
        lines = [f"# Backtest: {self.series_id} ({self.frequency}), {self.rule_version}", "", question, "",
                 "| measure | value |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in self.summary().items()
                  if k not in ("reliability_bins", "base_rate_candidates")]
        if m.get("base_rate_candidates"):
            lines += ["", "| base-rate candidates in use | origins |", "|---|---|"]
            lines += [f"| {name} | {count} |" for name, count in m["base_rate_candidates"].items()]
        if m.get("reliability_bins"):
            lines += ["", "ECE bins (10 equal-width):", "",
                      "| bin | n | mean forecast | observed frequency |", "|---|---|---|---|"]
            lines += [f"| [{b['lower']:.1f}, {b['upper']:.1f}] | {b['n']} | {b['mean_forecast']:.3f} | "
                      f"{b['observed_frequency']:.3f} |" for b in m["reliability_bins"]]
        lines += ["", *[f"- {note}" for note in self.notes]]
        return "\n".join(lines) + "\n"

    def reliability_png(self) -> bytes | None:
        if self.metrics.get("n", 0) == 0:
            return None
        resolved = [r for r in self.rows if r.outcome is not None]
        decomposition = accuracy_metrics([r.probability for r in resolved], [r.outcome for r in resolved],
                                         bins=REPORT_BINS).decomposition
        return reliability_png(decomposition, title=f"Backtest {self.series_id}, h = {self.spec.horizon}, "
                                                    f"{self.rule_version}")

    def write(self, directory: Path) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        paths = {"markdown": directory / "backtest.md", "json": directory / "backtest.json"}
        paths["markdown"].write_text(self.markdown(), encoding="utf-8")
        paths["json"].write_text(json.dumps(self.as_dict(), indent=2), encoding="utf-8")
        png = self.reliability_png()
        if png is not None:
            paths["reliability"] = directory / "reliability.png"
            paths["reliability"].write_bytes(png)
        return paths


def _fmt(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


CALIBRATED_DRAWS = 300
ECE_TARGET = 0.05
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_LEVEL = 0.90
_STANDARD_NORMAL = NormalDist()


def calibrated_outcomes(probability: np.ndarray, rows: np.ndarray | None = None, horizon: int = 1,
                        draws: int = CALIBRATED_DRAWS, seed: int = 0) -> np.ndarray:
    """`draws` outcome sets (draw × origin, bool) as if each forecast were exactly right: P(yes) = p at every
    origin. Given each origin's row in the series and the horizon in rows, origins closer than the horizon
    share their path as a series' changes do: origin i says yes when one Gaussian random walk's change over
    rows [rows[i], rows[i] + horizon] lands above the quantile that gives it probability p_i (overlapping
    changes correlate as k / h for any independent increments). Without rows, the draws are independent.
    Seeded, so the same forecasts give the same outcomes."""
    p = np.clip(np.asarray(probability, dtype=np.float64), 1e-12, 1 - 1e-12)
    rng = np.random.Generator(np.random.SFC64(seed))
    if rows is None:
        return rng.random((draws, len(p))) < p
    rows = np.asarray(rows, dtype=np.intp)
    rows = rows - rows.min() if rows.size else rows
    path = np.zeros((draws, int(np.max(rows, initial=0)) + horizon + 1))
    np.cumsum(rng.standard_normal((draws, path.shape[1] - 1)), axis=1, out=path[:, 1:])
    change = (path[:, rows + horizon] - path[:, rows]) / np.sqrt(horizon)  # N(0, 1) at each origin
    quantile = np.array([_STANDARD_NORMAL.inv_cdf(q) for q in 1.0 - p])
    return change > quantile


def calibrated_eces(probability: np.ndarray, rows: np.ndarray | None = None, horizon: int = 1,
                    draws: int = CALIBRATED_DRAWS, seed: int = 0) -> np.ndarray:
    """The ECE (10 equal-width bins, as reported) of `probability` in each of the outcome sets of
    `calibrated_outcomes` (overlapping horizons sharing their path when the origins' rows are given): the
    noise floor of the ECE at these forecasts, this many origins and this overlap. For a fixed-threshold
    question the outcomes of nearby origins share more than their changes, so there it is a lower bound."""
    p = np.asarray(probability, dtype=np.float64)
    outcomes = calibrated_outcomes(p, rows, horizon, draws, seed)
    index = np.minimum((p * REPORT_BINS).astype(np.intp), REPORT_BINS - 1)
    error = np.zeros(draws)
    for b in np.unique(index):
        in_bin = index == b
        error += in_bin.sum() * np.abs(p[in_bin].mean() - outcomes[:, in_bin].mean(axis=1))
    return error / len(p)


def ece_if_calibrated(probability: np.ndarray, rows: np.ndarray | None = None, horizon: int = 1,
                      draws: int = CALIBRATED_DRAWS, seed: int = 0) -> float:
    """The mean of `calibrated_eces`: the ECE these forecasts show on average if each is exactly right."""
    return float(calibrated_eces(probability, rows, horizon, draws, seed).mean())


def ece_bound(floor_p90: float) -> float:
    """Issue 41: a cell is calibrated when its ECE is at most max(0.05, the floor's 90th percentile) — an exactly
    right forecaster exceeds that in at most a tenth of such cells."""
    return max(ECE_TARGET, floor_p90)


def block_bootstrap_skill(loss: np.ndarray, reference_loss: np.ndarray, block: int,
                          resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                          level: float = BOOTSTRAP_LEVEL) -> tuple[float, float] | None:
    """The central `level` interval of skill = 1 − Σ loss / Σ reference_loss over moving-block bootstrap resamples
    of the origins (blocks of `block` consecutive origins, so outcomes that share their path are drawn together;
    ceil(n / block) blocks a resample). Seeded. None when the reference never loses."""
    n = len(loss)
    if n == 0:
        return None
    block = int(min(max(block, 1), n))
    starts = np.random.Generator(np.random.SFC64(seed)).integers(0, n - block + 1, (resamples, -(-n // block)))
    def block_sums(x: np.ndarray) -> np.ndarray:
        total = np.concatenate([[0.0], np.cumsum(x)])
        return (total[starts + block] - total[starts]).sum(axis=1)
    reference = block_sums(reference_loss)
    if np.any(reference <= 0):
        return None
    tail = (1.0 - level) / 2
    low, high = np.quantile(1.0 - block_sums(loss) / reference, [tail, 1.0 - tail])
    return float(low), float(high)


def origins_per_horizon(rows: np.ndarray | None, horizon: int) -> int:
    """How many consecutive origins span one horizon (the bootstrap's block): h over the median row gap."""
    if rows is None or len(rows) < 2:
        return 1
    return max(1, int(np.ceil(horizon / max(float(np.median(np.diff(rows))), 1.0))))


def skill_metrics(probability: np.ndarray, base_rate: np.ndarray, outcome: np.ndarray,
                  window_rates: np.ndarray, rows: np.ndarray | None = None, horizon: int = 1) -> dict:
    """Brier of the forecasts, of the whole-history base rate alone (at each origin), of p = 0.5 and
    of the best fixed rolling window chosen in hindsight (`window_rates`: origin × window); skill
    against the three; expected calibration error, its noise floor (`rows`: each origin's row in the series,
    `horizon` in rows, for the overlap) and the Murphy decomposition (10 bins)."""
    if len(outcome) == 0:
        return {"n": 0}
    metrics = accuracy_metrics(probability, outcome, fixed_base_rate=0.5, bins=REPORT_BINS)
    brier_base = float(np.mean(brier(base_rate, outcome)))
    floor = calibrated_eces(probability, rows, horizon)
    floor_p90 = float(np.quantile(floor, 0.9))
    ece = expected_calibration_error(metrics.decomposition)
    block = origins_per_horizon(rows, horizon)
    intervals = {}
    for name, reference in (("skill_vs_half", 0.5), ("skill_vs_base_rate", base_rate)):
        interval = block_bootstrap_skill(brier(probability, outcome), brier(reference, outcome), block)
        low, high = interval if interval else (None, None)
        intervals |= {f"{name}_low": low, f"{name}_high": high}
    window_briers = np.mean(brier(window_rates, outcome[:, None]), axis=0)
    best = int(np.argmin(window_briers))
    d = metrics.decomposition
    return {
        "n": metrics.n_resolved, "brier": metrics.brier, "brier_base_rate": brier_base,
        "brier_half": metrics.brier_fixed_base_rate, "skill_vs_base_rate": skill(metrics.brier, brier_base),
        "skill_vs_half": metrics.skill_vs_fixed_base_rate,
        "hindsight_window": rolling_window_name(ROLLING_WINDOWS_YEARS[best]),
        "brier_hindsight_window": float(window_briers[best]),
        "skill_vs_hindsight_window": skill(metrics.brier, float(window_briers[best])),
        **intervals, "bootstrap_block_origins": block,
        "ece": ece, "ece_if_calibrated": float(floor.mean()), "ece_if_calibrated_p90": floor_p90,
        "ece_bound": ece_bound(floor_p90), "calibrated": bool(ece <= ece_bound(floor_p90)),
        "ece_base_rate": expected_calibration_error(
            accuracy_metrics(base_rate, outcome, bins=REPORT_BINS).decomposition),
        "observed_frequency": metrics.base_rate, "reliability": d.reliability, "resolution": d.resolution,
        "uncertainty": d.uncertainty, "within_bin_variance": d.within_bin_variance,
        "within_bin_covariance": d.within_bin_covariance, "reliability_bins": d.bins,
    }


def run_backtest(series: SeriesSource, spec: BacktestSpec) -> BacktestResult:
    started = perf_counter()
    series_id, frequency = series.series_id, series.frequency
    dates, values = series.view.dates, series.view.values
    h = spec.horizon
    eligible = ~np.isnan(values)
    eligible[max(len(values) - h, 0):] = False  # the target must be a row of the file
    if spec.start is not None:
        eligible &= dates >= np.datetime64(spec.start)
    if spec.end is not None:
        eligible &= dates <= np.datetime64(spec.end)
    origins = np.flatnonzero(eligible)[::spec.every]
    rows: list[BacktestRow] = []
    skipped = 0
    compare = COMPARATORS[spec.comparator]
    rule_version, rule_on = RULES[spec.rule]
    rule = rule_on(series.view, frequency)
    references = AdaptiveRule(series.view, frequency)  # its rolling windows are the hindsight reference
    for t in origins:
        origin = dates[t].astype(date)
        target = dates[t + h].astype(date)
        question = BoundQuestion(
            key="backtest", series_id=series_id, comparator=spec.comparator, target_date=target,
            deadline=datetime.combine(target + timedelta(days=1), time(0), tzinfo=timezone.utc),
            threshold=spec.threshold, reference_date=None if spec.threshold is not None else origin)
        try:
            base_rate, drivers, *record = rule(int(t), question)  # as of the origin: no later row reaches the rule
        except ForecastInputError:
            skipped += 1
            continue
        history, last_index, _ = references.history(int(t), question)
        windows = tuple(float(r) for r in history.candidates[1:1 + len(ROLLING_WINDOWS_YEARS), last_index])
        forecast = make_forecast(question.text, base_rate=base_rate, drivers=drivers,
                               confidence_target=spec.confidence_target,
                               issued_at=datetime.combine(origin, time(0), tzinfo=timezone.utc),
                               requested_via="lane", engine={"drivers": rule_version},
                               seed=spec.seed * 1_000_003 + int(t))
        reference = values[t] if spec.threshold is None else spec.threshold
        target_value = values[t + h]
        outcome = None if np.isnan(target_value) else int(compare(target_value, reference))
        rows.append(BacktestRow(origin, target, forecast.result.probability, base_rate, outcome, windows,
                                " + ".join(record[0]["base_rate_candidates"]) if record else None,
                                record[0]["probability_before_sampling"] if record else None))
    resolved = [r for r in rows if r.outcome is not None]
    metrics = {"unresolvable": len(rows) - len(resolved), **_row_metrics(resolved, dates, h)}
    last_third = resolved[len(resolved) * 2 // 3:]  # a regime change shows here, not diluted by the older origins
    if last_third:
        tail = _row_metrics(last_third, dates, h)
        metrics |= {"last_third_from": last_third[0].origin.isoformat(), "last_third_n": tail["n"],
                    **{f"last_third_{k}": tail[k] for k in ("brier", "skill_vs_base_rate", "skill_vs_half", "ece",
                                                                   "ece_if_calibrated", "ece_if_calibrated_p90",
                                                                   "calibrated")}}
    if any(r.basis for r in rows):
        metrics["base_rate_candidates"] = dict(Counter(r.basis for r in rows).most_common())
    if resolved and resolved[0].rule_probability is not None:
        # the rule's own skill, before the spread of its drift driver is sampled
        metrics["skill_vs_base_rate_before_sampling"] = skill(
            float(np.mean([brier(r.rule_probability, r.outcome) for r in resolved])), metrics["brier_base_rate"])
    return BacktestResult(series_id, frequency, series.label, spec, rule_version, rows, skipped,
                          perf_counter() - started, metrics)


def _row_metrics(rows: list[BacktestRow], dates: np.ndarray, horizon: int) -> dict:
    origins = np.array([r.origin for r in rows], dtype="datetime64[D]")
    return skill_metrics(np.array([r.probability for r in rows]), np.array([r.base_rate for r in rows]),
                         np.array([r.outcome for r in rows], dtype=np.float64),
                         np.array([r.window_rates for r in rows]).reshape(len(rows), len(ROLLING_WINDOWS_YEARS)),
                         np.searchsorted(dates, origins), horizon)
