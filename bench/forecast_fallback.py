"""Fallback rules considered for issue 27, on origins before 2015 only: `python -m bench.forecast_fallback`.

Issue 27 asks for skill against the whole-history base rate >= 0 on periods nobody has seen. A
principled way to aim at that is a last step on top of rule v4 that falls back to the reference (the
whole-history rate w) when v4's extras have not paid on earlier origins. Each candidate below is a
rule a reader can state, computed from earlier origins only (outcomes published by the origin), on
v4's own probability before Monte-Carlo sampling (`AdaptiveHistory.probability`, p4):

- gate: p4 while its held-out Brier gain over w passes v4's own gate (15-year half-life, at least 30
  independent changes, gain above 0.25 standard errors), else w;
- shrink: w + λ·(p4 − w), λ in [0, 1] the least-squares coefficient of (outcome − w) on (p4 − w) over
  earlier origins (15-year half-life), used only while its own held-out gain over w passes the gate;
- recent sign: p4 unless its gain over w on earlier origins with a 3-year half-life is negative;
- leader: whichever of w, p4 and 0.5 has the largest gain over w on earlier origins (3-year half-life);
- equal mix: (p4 + w) / 2.

Third pass (issue 27: the 2015 held-out check fails on DGS10 at 30d and 1q, and the lead was that the
rule's probability looks overconfident next to its Monte-Carlo output), each again from earlier origins only:

- strict gate: the gate above with a 1-SE bar instead of 0.25 SE;
- soft drift: v4 with the drift counting max(0, 1 − 1/z²) instead of 0 or 1 (z = its held-out gain over
  the adaptive base rate in standard errors; 0 below 30 changes' worth), then v4's recalibration;
- no drift: v4 without its drift step (the adaptive base rate, then v4's recalibration);
- widened: sigmoid(logit(p4) / T), T in TEMPERATURES with the best held-out Brier on earlier origins
  (15-year half-life), once that record holds 30 independent changes' worth (before, p4) — what widening
  the drift's spread does to the Monte-Carlo mean: it pulls the log-odds toward 0, i.e. toward 0.5;
- tempered toward w: sigmoid(logit(w) + (logit(p4) − logit(w)) / T), T chosen the same way;
- each of those two gated: used only while its own record over p4 (each earlier origin scored with the T
  chosen before it) passes v4's gate, else p4.

A last section states what v4's record said at the cut itself (the last origin before 2015, outcomes
published by then only), which bounds what any rule chosen before the cut could have done there.

They are scored where a decision may look: the shared cells of `bench.forecast_skill` (DGS10 on its
origins before 2015 only) and DGS10's regimes before 2015 (1965–81, 1982–99, 2000–14) at 7d, 30d and
1q, on the origins `bench.forecast_skill` scores (every 5th published day), against the issue's targets for unseen periods (skill vs base rate >= 0,
vs 0.5 >= −0.005, ECE <= 0.05). Nothing from 2015 on is read for DGS10, so the held-out check of
`bench.forecast_skill` stays untouched by whatever this table decides. No Monte-Carlo: every number
is the rule's own probability; the table prints skill vs base rate / vs 0.5 / ECE per rule, then how
many regime checks each fails, in how many shared cells it loses skill against the base rate, and its
mean skill over those cells.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from bench.forecast_skill import CUT, REGIMES, _cells
from forum_atlas.forecasting.adaptive import (
    AdaptiveHistory,
    gated_recalibration,
    held_out_gate_passed,
    held_out_stats,
)
from forum_atlas.forecasting.drivers import (
    MIN_RECORD_CHANGES,
    PERIODS_PER_YEAR,
    RECORD_HALF_LIFE_YEARS,
    HeldOutRecord,
    _logit,
    _sigmoid,
    held_out_record,
    held_out_sums,
    origin_outcomes,
    satisfied_changes,
)
from forum_atlas.scoring.metrics import REPORT_BINS, accuracy_metrics, expected_calibration_error, skill

RECENT_HALF_LIFE_YEARS = 3.0
DAILY_EVERY = 5
STRICT_GATE_Z = 1.0
TEMPERATURES = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0)


def fallback_rules(history: AdaptiveHistory, outcome: np.ndarray, usable: np.ndarray,
                   periods_per_year: float) -> dict[str, np.ndarray]:
    """Each rule's probability at every row, from the origins whose outcome was published by then."""
    h = history.horizon
    v4, whole = history.probability, history.candidates[0]
    half = np.full(len(v4), 0.5)

    def gain_over_whole(p: np.ndarray, half_life: float = RECORD_HALF_LIFE_YEARS) -> np.ndarray:
        return held_out_sums((whole - outcome) ** 2 - (p - outcome) ** 2, usable, h, periods_per_year, half_life)

    moved = v4 - whole
    covariance = held_out_sums(moved * (outcome - whole), usable, h, periods_per_year)[1]
    variance = held_out_sums(moved * moved, usable, h, periods_per_year)[1]
    slope = np.clip(np.where(variance > 1e-12, covariance / np.where(variance > 1e-12, variance, 1.0), 0.0), 0, 1)
    shrunk = whole + slope * moved
    recent = np.stack([gain_over_whole(p, RECENT_HALF_LIFE_YEARS)[1] for p in (whole, v4, half)])
    recent[0] = 0.0  # w's gain over itself
    changes, mean, se = held_out_stats(history.drift_record, h)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, mean / se, np.where(mean > 0, np.inf, 0.0))
    z[changes < MIN_RECORD_CHANGES] = 0.0
    drift_weight = np.where(z > 1, 1 - 1 / np.maximum(z, 1) ** 2, 0.0)

    def recalibrated(raw: np.ndarray) -> np.ndarray:
        _, mapped, _, on = gated_recalibration(raw, outcome, usable, h, periods_per_year)
        return np.where(on, mapped, raw)

    def tempered(centre: np.ndarray) -> np.ndarray:
        """logit(p4) pulled toward logit(centre) by the temperature with the best held-out Brier so far, once
        that record holds MIN_RECORD_CHANGES independent changes' worth (before that, p4)."""
        scaled = [_sigmoid(_logit(centre) + (_logit(v4) - _logit(centre)) / t) for t in TEMPERATURES]
        records = [held_out_sums((v4 - outcome) ** 2 - (p - outcome) ** 2, usable, h, periods_per_year)
                   for p in scaled]
        best = np.choose(np.argmax(np.stack([record[1] for record in records]), axis=0), scaled)
        return np.where(records[0][0] / h >= MIN_RECORD_CHANGES, best, v4)

    def gated(p: np.ndarray) -> np.ndarray:
        """p where its record over p4 (each earlier origin scored with what p was there) passes v4's gate, else p4."""
        return np.where(held_out_gate_passed(held_out_sums((v4 - outcome) ** 2 - (p - outcome) ** 2, usable, h,
                                                           periods_per_year), h), p, v4)

    widened, toward_whole = tempered(half), tempered(whole)
    return {  # v4's fallbacks first (issue 27, second pass), then the third pass's rules
        "v4": v4,
        "gate": np.where(held_out_gate_passed(gain_over_whole(v4), h), v4, whole),
        "shrink": np.where(held_out_gate_passed(gain_over_whole(shrunk), h), shrunk, whole),
        "recent sign": np.where(recent[1] >= 0, v4, whole),
        "leader": np.choose(np.argmax(recent, axis=0), [whole, v4, half]),
        "equal mix": (v4 + whole) / 2,
        "strict gate": np.where(held_out_gate_passed(gain_over_whole(v4), h, STRICT_GATE_Z), v4, whole),
        "soft drift": recalibrated(history.adaptive + drift_weight * (history.drift - history.adaptive)),
        "no drift": recalibrated(history.adaptive),
        "widened": widened,
        "tempered toward w": toward_whole,
        "widened, gated": gated(widened),
        "tempered toward w, gated": gated(toward_whole),
    }


def _checks(label: str, dates: np.ndarray, values: np.ndarray, horizon: int, usable: np.ndarray, daily: bool
            ) -> Iterator[tuple[str, bool, np.ndarray]]:
    """(name, is a regime check, scored origins) — DGS10 before CUT only, on the origins `run_backtest`
    takes (every DAILY_EVERY-th published row whose target is a row of the file)."""
    if not daily:
        yield label, False, usable
        return
    eligible = ~np.isnan(values)
    eligible[max(len(values) - horizon, 0):] = False
    every = np.zeros(len(usable), dtype=bool)
    every[np.flatnonzero(eligible)[::DAILY_EVERY]] = True
    every &= usable
    yield f"{label} before {CUT.year}", False, every & (dates < np.datetime64(CUT))
    for start, end in REGIMES:
        if end <= CUT:
            yield f"{label} {start.year}–{end.year - 1}", True, every & (dates >= np.datetime64(start)) & (
                dates < np.datetime64(end))


def at_the_cut(history: AdaptiveHistory, outcome: np.ndarray, usable: np.ndarray, periods_per_year: float,
               row: int) -> tuple[HeldOutRecord, float]:
    """v4's held-out record against the whole-history rate w at `row` (outcomes published by then), and
    the least-squares slope of (outcome − w) on (p4 − w) over the same origins and weights: the factor
    by which a shrink toward w fitted on those origins would scale v4's departure from w."""
    h, v4, whole = history.horizon, history.probability, history.candidates[0]
    moved = v4 - whole
    record = held_out_record(held_out_sums((whole - outcome) ** 2 - (v4 - outcome) ** 2, usable, h,
                                           periods_per_year)[:, row], h)
    covariance = held_out_sums(moved * (outcome - whole), usable, h, periods_per_year)[1][row]
    variance = held_out_sums(moved * moved, usable, h, periods_per_year)[1][row]
    return record, float(covariance / variance) if variance > 1e-12 else float("nan")


def _scores(p: np.ndarray, whole: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    metrics = accuracy_metrics(p, y, fixed_base_rate=0.5, bins=REPORT_BINS)
    return (skill(metrics.brier, float(np.mean((whole - y) ** 2))), metrics.skill_vs_fixed_base_rate,
            expected_calibration_error(metrics.decomposition))


def main() -> None:
    names: list[str] | None = None
    regime_fails: dict[str, int] = {}
    shared_losses: dict[str, int] = {}
    shared_skill: dict[str, list[float]] = {}
    largest_ece: dict[str, float] = {}  # over the shared cells with n >= 1,000, where the ECE target applies
    cut_rows = []
    for label, series, horizon, h in _cells():
        values = series.view.values
        periods_per_year = PERIODS_PER_YEAR.get(series.frequency, 12.0)
        history = AdaptiveHistory.of(values, h, ">", 0.0, periods_per_year)
        outcome, usable = origin_outcomes(values, satisfied_changes(values, h, ">", 0.0), h, history.enough_history)
        rules = fallback_rules(history, outcome, usable, periods_per_year)
        if series.frequency == "daily":
            last_before = int(np.searchsorted(series.view.dates, np.datetime64(CUT))) - 1
            cut_rows.append((horizon, series.view.dates[last_before],
                             *at_the_cut(history, outcome, usable, periods_per_year, last_before)))
        if names is None:
            names = list(rules)
            regime_fails, shared_losses = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
            shared_skill = {name: [] for name in names}
            largest_ece = dict.fromkeys(names, 0.0)
            print(f"| origins | horizon | n | {' | '.join(names)} |\n|" + "---|" * (3 + len(names)), flush=True)
        for check, is_regime, origins in _checks(label, series.view.dates, values, h, usable,
                                                       series.frequency == "daily"):
            cells = []
            for name, p in rules.items():
                vs_base, vs_half, ece = _scores(p[origins], history.candidates[0][origins], outcome[origins])
                cells.append(f"{vs_base:+.4f} / {vs_half:+.4f} / {ece:.3f}")
                if is_regime:
                    regime_fails[name] += not (vs_base >= 0 and vs_half >= -0.005 and ece <= 0.05)
                else:
                    shared_losses[name] += vs_base < 0
                    shared_skill[name].append(vs_base)
                    if origins.sum() >= 1000:
                        largest_ece[name] = max(largest_ece[name], ece)
            print(f"| {check} | {horizon} | {int(origins.sum())} | {' | '.join(cells)} |", flush=True)
    print("\nCells: skill vs base rate / skill vs 0.5 / ECE, each rule's probability before sampling.\n")
    print("| rule | regime checks before 2015 failed (of 9) | shared cells losing skill vs base rate (of 18) | "
          "mean skill vs base rate over the shared cells | largest ECE of the shared cells with n >= 1,000 |\n"
          "|---|---|---|---|---|")
    for name in names or []:
        print(f"| {name} | {regime_fails[name]} | {shared_losses[name]} | {np.mean(shared_skill[name]):+.4f} | "
              f"{largest_ece[name]:.3f} |")
    print("\nDGS10 at the cut: v4's held-out record against the whole-history rate w (15-year half-life, outcomes "
          "published by then), and the least-squares slope of (outcome − w) on (p4 − w) over it.\n")
    print("| horizon | as of | record: gain ± SE (independent changes) | z | passes v4's gate (0.25 SE) | "
          "slope |\n|---|---|---|---|---|---|")
    for horizon, day, record, slope in cut_rows:
        print(f"| {horizon} | {day} | {record.gain:+.4f} ± {record.gain_se:.4f} ({record.changes:.0f}) | "
              f"{record.gain / record.gain_se:.2f} | {'yes' if record.passed else 'no'} | {slope:.2f} |")


if __name__ == "__main__":
    main()
