"""Rule "series-stable-base-rate-v6" (STABLE_RULE_VERSION): issue 27's sixth-pass candidate, NOT the lane's rule.

Every rule so far anchors on the whole-history rate w ("how often since the series began") and departs
from it by what held-out records support. How far w itself departs from 0.5 is taken at face value, as
if the series' past were one regime: its standard error is binomial, tiny after decades of daily data.
A series whose regimes differ (a rate that rose for twenty years, then fell for thirty) says otherwise:
the share of rises over each stretch of years moves far more than sampling explains, and w is one draw
of where that share happens to average so far. v6 measures that at every row and acts on it:

- stability: cut the visible history into consecutive blocks of STABILITY_BLOCK_YEARS from its first
  row (complete blocks only) and take each block's share of changes satisfying the question. The
  standard error of the whole-history share, counting each block as one draw of a regime, is
  se² = (variance of the block shares) / (number of blocks) (a random-effects standard error: it includes
  the between-regime spread the binomial one ignores). The departure of w from 0.5 that the history
  supports is (w − 0.5)·d²/(d² + se²), d = w − 0.5: a normal prior centred on 0.5 (no drift at all)
  with the observed departure as its scale, so a departure many standard errors wide (a price index's
  rises, steady in every block) is kept whole and one within its own noise is halved or more. The
  stable rate is w' = 0.5 + that departure.
- the published probability is v4's, moved by the same amount its anchor moved: p4 + (w' − w) (kept
  within PROBABILITY_FLOOR of 0 and 1): v4's steps keep the departures from w they earned held out.
- gated: only while that probability's record over p4 on earlier origins (outcomes published by then)
  passes v4's gate (RECORD_HALF_LIFE_YEARS half-life, at least MIN_RECORD_CHANGES independent changes,
  a gain above DRIFT_GATE_Z standard errors); else p4.

The block length and the prior's form were chosen on data before 2015 only (bench.forecast_fallback,
sixth pass: blocks of 3, 5 and 10 years, gates at 0.25 and 1 SE, ungated); the rest is v4's. There it
misses one unseen-period target fewer than v4. It is kept as a backtest rule (`run_backtest(...,
rule="v6")`), not bound by the lane: in bench.forecast_skill's tables it meets exactly the cells v4 meets
(it narrows most of v4's misses — the shared macrodata unemp h=1 ECE, DGS10 30d held out, 1982–99 30d —
but closes none, and DGS10 1q held out is a little worse), and the lane changes rule only for more targets met.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forum_atlas.forecasting.adaptive import (
    PROBABILITY_FLOOR,
    AdaptiveHistory,
    LastStepRule,
    RuleAnswer,
    held_out_gate_passed,
)
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import (
    DRIFT_GATE_Z,
    MIN_RECORD_CHANGES,
    RECORD_HALF_LIFE_YEARS,
    SeriesView,
    held_out_record,
    held_out_sums,
    logit,
    satisfied_changes,
)
from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.scoring.rules import brier
from forum_atlas.series.parsing import Observation

STABLE_RULE_VERSION = "series-stable-base-rate-v6"
STABILITY_DRIVER = "base-rate stability"
STABILITY_BLOCK_YEARS = 5.0


def block_standard_error(satisfied: np.ndarray, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """At every row: the number of complete blocks of `block_rows` rows (from row 0) whose changes were all
    known by then, and the squared standard error of the mean of their shares (variance of the block shares
    over their number; inf with fewer than two blocks holding a change)."""
    n = len(satisfied)
    known = ~np.isnan(satisfied)
    hits = np.concatenate([[0.0], np.cumsum(np.where(known, satisfied, 0.0))])
    counts = np.concatenate([[0], np.cumsum(known)])
    blocks = np.zeros(n, dtype=np.int64)
    se2 = np.full(n, np.inf)
    for k in range(2, n // block_rows + 1):
        edges = np.arange(k + 1) * block_rows
        in_block = np.diff(counts[edges])
        filled = in_block > 0
        first_row = k * block_rows - 1  # the last change of block k − 1 is known at its own row
        blocks[first_row:] = filled.sum()
        if filled.sum() >= 2:
            shares = np.diff(hits[edges])[filled] / in_block[filled]
            se2[first_row:] = np.var(shares, ddof=1) / filled.sum()
    return blocks, se2


def stable_rate(whole: np.ndarray, se2: np.ndarray) -> np.ndarray:
    """0.5 + (w − 0.5)·d²/(d² + se²), d = w − 0.5; w itself where there is no standard error yet."""
    departure = (whole - 0.5) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = np.where(np.isfinite(se2), departure / np.maximum(departure + se2, 1e-300), 1.0)
    return 0.5 + kept * (whole - 0.5)


@dataclass(frozen=True)
class Stability:
    """v6's step at every row of one question's history, from the rows (and published outcomes) up to it."""
    horizon: int
    block_years: float
    blocks: np.ndarray          # complete blocks behind the standard error
    block_se: np.ndarray        # the whole-history share's random-effects standard error (inf: too few blocks)
    whole: np.ndarray
    stable: np.ndarray          # w'
    moved: np.ndarray           # p4 + (w' − w), within PROBABILITY_FLOOR of 0 and 1
    record: np.ndarray          # (3, row) held-out sums of the moved probability's Brier gain over p4
    on: np.ndarray
    probability: np.ndarray     # what v6 publishes (before Monte-Carlo sampling)

    @classmethod
    def of(cls, history: AdaptiveHistory, satisfied: np.ndarray, periods_per_year: float,
           block_years: float = STABILITY_BLOCK_YEARS, gate_z: float = DRIFT_GATE_Z) -> Stability:
        """v6 is the defaults; other block lengths and gates are the variants it was chosen against.
        `satisfied`: the question's h-period changes (`satisfied_changes`) that `history` was built from."""
        h, p4, whole = history.horizon, history.probability, history.candidates[0]
        blocks, se2 = block_standard_error(satisfied, max(int(round(block_years * periods_per_year)), 1))
        stable = stable_rate(whole, se2)
        moved = np.clip(p4 + stable - whole, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
        outcome, usable = history.outcome, history.usable
        record = held_out_sums(brier(p4, outcome) - brier(moved, outcome), usable, h, periods_per_year)
        on = held_out_gate_passed(record, h, gate_z)
        return cls(h, block_years, blocks, np.sqrt(se2), whole, stable, moved, record, on, np.where(on, moved, p4))

    def answer(self, i: int, answer: RuleAnswer) -> RuleAnswer:
        """v4's answer at row i with the stability driver after its drivers and the step in its record."""
        p4 = answer.record["probability_before_sampling"]
        whole, stable, moved = float(self.whole[i]), float(self.stable[i]), float(self.moved[i])
        se, blocks = float(self.block_se[i]), int(self.blocks[i])
        record = held_out_record(self.record[:, i], self.horizon)
        weight = 1.0 if self.on[i] else 0.0
        spread = (f"standard error {se:.3f} over {blocks} blocks of {self.block_years:g} years" if np.isfinite(se)
                  else f"no standard error yet ({blocks} complete blocks of {self.block_years:g} years)")
        driver = Driver(
            name=STABILITY_DRIVER, weight=weight, effect=float(logit(moved) - logit(p4)), effect_sd=0.0,
            hypothesis=(f"the whole-history rate {whole:.3f} departs from 0.5 by more than the history's regimes "
                        f"support: the stable rate is {stable:.3f}, which moves the rule's {p4:.3f} to {moved:.3f}"),
            rationale=(f"share of each block's changes satisfying the question: {spread}; the departure from 0.5 "
                       f"kept is d²/(d² + se²) of it; on earlier origins whose outcome was known at issue the moved "
                       f"probability gained {record.gain:+.4f} Brier over the rule (± {record.gain_se:.4f}, "
                       f"{record.changes:.0f} independent changes' worth, half-life {RECORD_HALF_LIFE_YEARS:g} "
                       f"years; counts with at least {MIN_RECORD_CHANGES:g} and above {DRIFT_GATE_Z:g} standard "
                       f"errors): {'passed' if weight else 'failed'} — weight {weight:g}"))
        steps = answer.record | {"stable_base_rate": stable, "stability_blocks": blocks,
                                 "stability_standard_error": se if np.isfinite(se) else None,
                                 "stability_applied": bool(weight), "stability_held_out_brier_gain": record.gain,
                                 "stability_held_out_brier_gain_se": record.gain_se,
                                 "stability_held_out_changes": record.changes,
                                 "probability_before_sampling": float(self.probability[i])}
        return RuleAnswer(answer.base_rate, [*answer.drivers, driver], steps)


class StableRule(LastStepRule):
    """Rule v6 on one series: `rule(i, question)` answers as of row i, from rows up to i only (v4's history of
    the last change question asked, and its stability step, are kept)."""

    def __init__(self, view: SeriesView, frequency: str):
        super().__init__(view, frequency, lambda history, comparator, required, values, periods_per_year:
                         Stability.of(history, satisfied_changes(values, history.horizon, comparator, required),
                                      periods_per_year))


def stable_answer(observations: Sequence[Observation], question: BoundQuestion, frequency: str) -> RuleAnswer:
    """Rule v6 for `question` from the observations visible at issue."""
    view = SeriesView.of(observations)
    return StableRule(view, frequency)(len(view.values) - 1, question)
