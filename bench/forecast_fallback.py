"""Rules considered for issue 27, on data dated before 2015 only: `python -m bench.forecast_fallback`.

Every series is cut before anything is computed (`before_cut`: the file as if downloaded on the last day
before 2015-01-01), so no value, outcome or record from the cut on can reach a rule, a score or a choice
made here; `bench.forecast_skill` (section 3) is the only place the period after the cut is scored.

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

Fourth pass (issue 27): the widening, gated (rule v5, `atlas/forecasting/widened.py`: temperatures up to
2, gate 0.25 SE), against grids up to 1.5, 3 and 5 and gates at 0, 0.5 and 1 SE, beside v4. `choose`
reads, in this order: (a) the issue's shared-table targets as far as the cut data show them — no more
shared cells than v4 losing skill vs the base rate or with an ECE above v3's by more than 0.005 (a few
cells of about 50 origins miss for every rule), and ECE <= 0.05 in every shared cell with n >= 1,000;
(b) fewest misses of the targets for unseen periods (skill vs base rate >= 0, vs 0.5 >= -0.005,
ECE <= 0.05) over DGS10's three regimes and five pseudo-held-out windows — the seven years after each
of 1980, 1987, 1994, 2001 and 2008, every origin: the length of the real held-out period (2015–21),
tiled back from the cut — at 7d, 30d and 1q; (c) the highest mean skill vs the base rate over the
shared cells. If no rule meets (a), v4 stays. It keeps v4: every widening with a gate below 1 SE
raises DGS10 7d's ECE above v3's by more than 0.005, and the 1-SE gate misses one unseen-period
target more than v4.

Fifth pass (issue 27): stacking (`bench/forecast_stacking.py`): the convex combination of w, 0.5 and p4
with the least Brier on earlier origins (half-life 5 years, ridge toward w of 4 independent changes'
worth against the record's size in independent changes, i.e. decayed origins / h), gated against p4 at
1 SE; beside it the same ungated, gated at v4's 0.25 SE and at 2 SE, with half-lives 3 and 15 years, and
with a ridge of 16 changes. `choose` reads them as the fourth pass. Ungated, stacking loses skill vs the
base rate in 6 shared cells (where v4 equals w, weight moved to 0.5 or p4 on few independent changes
costs more than it gains); gated below 1 SE it raises the ECE of 2 to 3 shared cells above v3's; at 1 SE
it ties v4 on both counts and on the unseen-period targets (11 missed each), with a lower mean skill, so
`choose` keeps v4; above 1 SE it is v4 (it almost never turns on). (An earlier exploration, not kept in
code: half-lives 3–15 years × ridges 4 and 16 × gates 0.5–2 SE; a fixed shrink toward w or 0.5 by
n/(n + k) with n the record's independent changes, k 10–100; a walk-forward bias correction of p4. None
missed fewer than 11 unseen-period targets or met (a) with a higher mean skill.)

Sixth pass (issue 27): rule v6 (`atlas/forecasting/stable.py`): v4's probability moved by as much as the
whole-history rate's departure from 0.5 shrinks once its standard error counts each 5-year block of the
history as one draw of a regime (d²/(d² + se²) of it kept), gated against p4 at v4's 0.25 SE; beside it
the same ungated, gated at 1 SE, and with blocks of 3 and 10 years. `choose` reads them as the fourth
pass, and picks v6: one unseen-period target fewer missed than v4 (10 of 24), the same shared cells
losing skill and over v3's ECE, and no larger shared ECE. (Explored before it, not kept in code: the
positive-part James–Stein factor max(0, 1 − se²/d²) instead, and the move applied to log-odds instead of
the probability: neither missed fewer targets, and each lost skill or calibration in more shared cells.)

A last section states what v4's record said at the cut itself (the last origin before 2015, outcomes
published by then only), which bounds what any rule chosen before the cut could have done there.

Scored: the shared cells of `bench.forecast_skill` and DGS10's regimes before 2015 (1965–81, 1982–99,
2000–14) on the origins it scores (every 5th published day on DGS10), and the pseudo-held-out windows on
every origin, as its held-out check. No Monte-Carlo: every number is the rule's own probability; each
pass prints skill vs base rate / vs 0.5 / ECE per rule, then per rule the unseen-period targets it
misses, the shared cells where it loses skill or its ECE exceeds v3's by more than 0.005, its mean
skill over the shared cells and its largest ECE where n >= 1,000.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import date

import numpy as np

from bench.forecast_skill import CUT, REGIMES, _cells
from bench.forecast_stacking import Stacking
from forum_atlas.forecasting.adaptive import (
    AdaptiveHistory,
    gated_recalibration,
    held_out_gate_passed,
    held_out_stats,
)
from forum_atlas.forecasting.backtest import SeriesSource
from forum_atlas.forecasting.drivers import (
    MIN_RECORD_CHANGES,
    PERIODS_PER_YEAR,
    RECORD_HALF_LIFE_YEARS,
    DriftHistory,
    HeldOutRecord,
    SeriesView,
    held_out_record,
    held_out_sums,
    logit,
    satisfied_changes,
    sigmoid,
)
from forum_atlas.forecasting.stable import Stability
from forum_atlas.forecasting.widened import TEMPERATURES as V5_TEMPERATURES
from forum_atlas.forecasting.widened import Widening
from forum_atlas.scoring.metrics import REPORT_BINS, accuracy_metrics, expected_calibration_error, skill
from forum_atlas.scoring.rules import brier

RECENT_HALF_LIFE_YEARS = 3.0
DAILY_EVERY = 5
STRICT_GATE_Z = 1.0
TEMPERATURES = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0)
PSEUDO_HELD_OUT_STARTS = (1980, 1987, 1994, 2001, 2008)
PSEUDO_HELD_OUT_YEARS = 7


def before_cut(series: SeriesSource) -> SeriesSource:
    """The series as if downloaded on the last day before CUT: every later row is dropped."""
    keep = series.view.dates < np.datetime64(CUT)
    return replace(series, view=SeriesView(series.view.dates[keep], series.view.values[keep]))


def widening_variants(history: AdaptiveHistory, periods_per_year: float) -> dict[str, np.ndarray]:
    """The fourth pass's rules at every row: v4, and v5's widening over other temperature grids and gates."""
    def widened(temperatures: tuple[float, ...], gate_z: float = 0.25) -> np.ndarray:
        return Widening.of(history.probability, history.outcome, history.usable, history.horizon, periods_per_year,
                           temperatures, gate_z).probability

    return {"v4": history.probability,
            "T <= 1.5, gated": widened(V5_TEMPERATURES[:3]),
            "T <= 2, gated (v5)": Widening.of(history.probability, history.outcome, history.usable,
                                              history.horizon, periods_per_year).probability,
            "T <= 3, gated": widened((*V5_TEMPERATURES, 3.0)),
            "T <= 5, gated (third pass)": widened(TEMPERATURES),
            "T <= 2, gate 0 SE": widened(V5_TEMPERATURES, 0.0),
            "T <= 2, gate 0.5 SE": widened(V5_TEMPERATURES, 0.5),
            "T <= 2, gate 1 SE": widened(V5_TEMPERATURES, 1.0)}


def stacking_variants(history: AdaptiveHistory, periods_per_year: float) -> dict[str, np.ndarray]:
    """The fifth pass's rules at every row: v4, the stacking, and its variants (half-life, ridge, gate)."""
    def stacking(**variant) -> Stacking:
        return Stacking.of(history.probability, history.candidates[0], history.outcome, history.usable,
                           history.horizon, periods_per_year, **variant)

    main = stacking()
    return {"v4": history.probability, "stacking (half-life 5, ridge 4, gate 1 SE)": main.probability,
            "ungated": main.stacked, "gate 0.25 SE (v4's)": stacking(gate_z=0.25).probability,
            "gate 2 SE": stacking(gate_z=2.0).probability,
            "half-life 3": stacking(half_life=3.0).probability, "half-life 15": stacking(half_life=15.0).probability,
            "ridge 16": stacking(prior=16.0).probability}


def stability_variants(history: AdaptiveHistory, satisfied: np.ndarray, periods_per_year: float
                       ) -> dict[str, np.ndarray]:
    """The sixth pass's rules at every row: v4, v6's stability step, and its variants (blocks, gate)."""
    v6 = Stability.of(history, satisfied, periods_per_year)
    return {"v4": history.probability, "v6 (5-year blocks, gate 0.25 SE)": v6.probability, "ungated": v6.moved,
            "gate 1 SE": Stability.of(history, satisfied, periods_per_year, gate_z=1.0).probability,
            **{f"{years:g}-year blocks": Stability.of(history, satisfied, periods_per_year,
                                                     block_years=years).probability for years in (3.0, 10.0)}}


@dataclass
class Tally:
    """One rule's counts over the cut data, in the order `choose` reads them."""
    shared_losses: int = 0
    ece_over_v3: int = 0        # shared cells whose ECE exceeds rule v3's by more than 0.005
    largest_ece: float = 0.0    # over the shared cells with n >= 1,000
    misses: int = 0             # of the unseen-period targets, regimes and pseudo-held-out windows
    shared_skill: list[float] = field(default_factory=list)

    def add(self, kind: str, n: int, v3_ece: float, vs_base: float, vs_half: float, ece: float) -> None:
        if kind == "shared":
            self.shared_losses += vs_base < 0
            self.ece_over_v3 += ece > v3_ece + 0.005
            self.shared_skill.append(vs_base)
            if n >= 1000:
                self.largest_ece = max(self.largest_ece, ece)
        else:
            self.misses += not (vs_base >= 0 and vs_half >= -0.005 and ece <= 0.05)


def choose(tallies: dict[str, Tally]) -> str:
    """(a) the shared-table targets: no more shared cells losing skill, or with an ECE above v3's by more than
    0.005, than v4 (a few cells of 50 origins miss for every rule), and every large shared cell's ECE <= 0.05;
    (b) fewest misses of the unseen-period targets; (c) highest mean shared skill. v4 if no rule meets (a)."""
    v4 = tallies["v4"]
    eligible = [name for name, t in tallies.items()
                if t.shared_losses <= v4.shared_losses and t.ece_over_v3 <= v4.ece_over_v3 and t.largest_ece <= 0.05]
    if not eligible:
        return "v4"
    return min(eligible, key=lambda name: (tallies[name].misses, -np.mean(tallies[name].shared_skill)))


def _windows(label: str, dates: np.ndarray, values: np.ndarray, horizon: int, usable: np.ndarray, daily: bool
             ) -> Iterator[tuple[str, str, np.ndarray]]:
    """(name, kind, scored origins) for the fourth pass: the shared cell and the regimes on the origins
    bench.forecast_skill scores (every DAILY_EVERY-th on the daily series), and on the daily series the
    pseudo-held-out windows (every origin, as its held-out check)."""
    for name, is_regime, origins in _checks(label, dates, values, horizon, usable, daily):
        yield name, "regime" if is_regime else "shared", origins
    if not daily:
        return
    for start in PSEUDO_HELD_OUT_STARTS:
        window = (dates >= np.datetime64(date(start, 1, 1))) & (
            dates < np.datetime64(date(start + PSEUDO_HELD_OUT_YEARS, 1, 1)))
        yield f"{label} {start}–{start + PSEUDO_HELD_OUT_YEARS - 1}", "pseudo-held-out", usable & window


def fallback_rules(history: AdaptiveHistory, outcome: np.ndarray, usable: np.ndarray,
                   periods_per_year: float) -> dict[str, np.ndarray]:
    """Each rule's probability at every row, from the origins whose outcome was published by then."""
    h = history.horizon
    v4, whole = history.probability, history.candidates[0]
    half = np.full(len(v4), 0.5)

    def gain_over_whole(p: np.ndarray, half_life: float = RECORD_HALF_LIFE_YEARS) -> np.ndarray:
        return held_out_sums(brier(whole, outcome) - brier(p, outcome), usable, h, periods_per_year, half_life)

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
        scaled = [sigmoid(logit(centre) + (logit(v4) - logit(centre)) / t) for t in TEMPERATURES]
        records = [held_out_sums(brier(v4, outcome) - brier(p, outcome), usable, h, periods_per_year)
                   for p in scaled]
        best = np.choose(np.argmax(np.stack([record[1] for record in records]), axis=0), scaled)
        return np.where(records[0][0] / h >= MIN_RECORD_CHANGES, best, v4)

    def gated(p: np.ndarray) -> np.ndarray:
        """p where its record over p4 (each earlier origin scored with what p was there) passes v4's gate, else p4."""
        return np.where(held_out_gate_passed(held_out_sums(brier(v4, outcome) - brier(p, outcome), usable, h,
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
    record = held_out_record(held_out_sums(brier(whole, outcome) - brier(v4, outcome), usable, h,
                                           periods_per_year)[:, row], h)
    covariance = held_out_sums(moved * (outcome - whole), usable, h, periods_per_year)[1][row]
    variance = held_out_sums(moved * moved, usable, h, periods_per_year)[1][row]
    return record, float(covariance / variance) if variance > 1e-12 else float("nan")


def _scores(p: np.ndarray, whole: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    metrics = accuracy_metrics(p, y, fixed_base_rate=0.5, bins=REPORT_BINS)
    return (skill(metrics.brier, float(np.mean(brier(whole, y)))), metrics.skill_vs_fixed_base_rate,
            expected_calibration_error(metrics.decomposition))


def _print_pass(title: str, rows: list[str], tallies: dict[str, Tally]) -> None:
    names = list(tallies)
    print(f"{title}\n\n| origins | horizon | n | {' | '.join(names)} |\n|" + "---|" * (3 + len(names)))
    print("\n".join(rows))
    print("\nCells: skill vs base rate / skill vs 0.5 / ECE, each rule's probability before sampling. Shared cells "
          "and regimes on the origins bench.forecast_skill scores (every 5th on DGS10), pseudo-held-out windows on "
          "every origin.\n")
    print("| rule | unseen-period targets missed (9 regimes, 15 pseudo-held-out windows) | shared cells losing skill "
          "vs base rate | shared cells with ECE above v3's by > 0.005 | mean skill vs base rate over the shared cells "
          "| largest ECE of the shared cells with n >= 1,000 |\n|---|---|---|---|---|---|")
    for name, t in tallies.items():
        print(f"| {name} | {t.misses} | {t.shared_losses} | {t.ece_over_v3} | {np.mean(t.shared_skill):+.4f} | "
              f"{t.largest_ece:.3f} |")
    print(flush=True)


Passes = dict[str, tuple[list[str], dict[str, Tally]]]


def evaluate(cells: Iterable[tuple[str, SeriesSource, str, int]]) -> tuple[Passes, list[tuple]]:
    """Each pass's table rows and tallies, and DGS10's record at the cut, from `cells` cut at CUT first."""
    passes: Passes = {"fallbacks": ([], {}), "widening": ([], {}), "stacking": ([], {}), "stability": ([], {})}
    cut_rows = []
    for label, series, horizon, h in cells:
        series = before_cut(series)  # from here on nothing dated from the cut on exists
        values, dates, daily = series.view.values, series.view.dates, series.frequency == "daily"
        periods_per_year = PERIODS_PER_YEAR.get(series.frequency, 12.0)
        history = AdaptiveHistory.of(values, h, ">", 0.0, periods_per_year)
        outcome, usable = history.outcome, history.usable
        if not usable.any():
            continue  # FEDFUNDS: the file starts after the cut
        if daily:
            cut_rows.append((horizon, dates[-1], *at_the_cut(history, outcome, usable, periods_per_year,
                                                             len(values) - 1)))
        v3 = DriftHistory.of(values, h, ">", 0.0, periods_per_year)
        v3 = np.where(held_out_gate_passed(v3.record, h), v3.drift, v3.base)
        windows = list(_windows(label, dates, values, h, usable, daily))
        for (rows, tallies), rules in (
                (passes["fallbacks"], fallback_rules(history, outcome, usable, periods_per_year)),
                (passes["widening"], widening_variants(history, periods_per_year)),
                (passes["stacking"], stacking_variants(history, periods_per_year)),
                (passes["stability"], stability_variants(history, satisfied_changes(values, h, ">", 0.0),
                                                         periods_per_year))):
            for check, kind, origins in windows:
                shown = []
                v3_ece = _scores(v3[origins], history.candidates[0][origins], outcome[origins])[2]
                for name, p in rules.items():
                    scores = _scores(p[origins], history.candidates[0][origins], outcome[origins])
                    tallies.setdefault(name, Tally()).add(kind, int(origins.sum()), v3_ece, *scores)
                    shown.append("{:+.4f} / {:+.4f} / {:.3f}".format(*scores))
                rows.append(f"| {check} | {horizon} | {int(origins.sum())} | {' | '.join(shown)} |")
    return passes, cut_rows


def main() -> None:
    passes, cut_rows = evaluate(_cells())
    _print_pass("Second and third passes: fallbacks on v4.", *passes["fallbacks"])
    _print_pass("Fourth pass: v5's widening against its variants.", *passes["widening"])
    print(f"Chosen by `choose` on the data before {CUT}: {choose(passes['widening'][1])}\n")
    _print_pass("Fifth pass: the stacking of w, 0.5 and v4 against its variants.", *passes["stacking"])
    print(f"Chosen by `choose` on the data before {CUT}: {choose(passes['stacking'][1])}\n")
    _print_pass("Sixth pass: v6's stability step against its variants.", *passes["stability"])
    print(f"Chosen by `choose` on the data before {CUT}: {choose(passes['stability'][1])}\n")
    print("DGS10 at the cut: v4's held-out record against the whole-history rate w (15-year half-life, outcomes "
          "published by then), and the least-squares slope of (outcome − w) on (p4 − w) over it.\n")
    print("| horizon | as of | record: gain ± SE (independent changes) | z | passes v4's gate (0.25 SE) | "
          "slope |\n|---|---|---|---|---|---|")
    for horizon, day, record, slope in cut_rows:
        print(f"| {horizon} | {day} | {record.gain:+.4f} ± {record.gain_se:.4f} ({record.changes:.0f}) | "
              f"{record.gain / record.gain_se:.2f} | {'yes' if record.passed else 'no'} | {slope:.2f} |")


if __name__ == "__main__":
    main()
