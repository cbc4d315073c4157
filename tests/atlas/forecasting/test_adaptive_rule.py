"""Rule v4 on synthetic series: the base rate follows a regime change only once a candidate has beaten
the whole history on held-out earlier origins, the recalibration map is monotone and fitted on
earlier outcomes only, and every row uses only the rows up to it."""

from __future__ import annotations

from datetime import date, datetime, timezone

import numpy as np
import pytest

from forum_atlas.forecasting.adaptive import (
    ADAPTIVE_DRIVER,
    COIN_FLIP,
    RECALIBRATION_DRIVER,
    WHOLE_HISTORY,
    AdaptiveHistory,
    AdaptiveRule,
    Recalibration,
    held_out_gate_passed,
    held_out_stats,
)
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import DRIFT_DRIVER, SeriesView, held_out_record, held_out_sums
from forum_atlas.forecasting.montecarlo import simulate


def _walk(up_probabilities: np.ndarray, seed: int) -> SeriesView:
    """A monthly series that rises in month j with probability up_probabilities[j], else falls."""
    rng = np.random.default_rng(seed)
    n = len(up_probabilities)
    steps = np.where(rng.random(n) < up_probabilities, 1.0, -1.0) * rng.uniform(0.5, 1.5, n)
    dates = (np.datetime64("1950-01", "M") + np.arange(len(steps) + 1)).astype("datetime64[D]")
    return SeriesView(dates, np.concatenate([[100.0], 100.0 + np.cumsum(steps)]))


def _next_month(view: SeriesView) -> BoundQuestion:
    last, target = view.dates[-1].astype(date), (view.dates[-1].astype("datetime64[M]") + 1).astype(date)
    return BoundQuestion("k", "SYNTH", ">", target, datetime(2100, 1, 1, tzinfo=timezone.utc), reference_date=last)


def test_after_a_regime_change_a_recent_rate_that_beat_the_whole_history_held_out_is_used():
    view = _walk(np.r_[np.full(480, 0.7), np.full(240, 0.3)], seed=1)  # 40 years mostly up, then 20 mostly down
    base_rate, drivers, record = AdaptiveRule(view, "monthly")(len(view.values) - 1, _next_month(view))
    adaptive = drivers[0]
    assert adaptive.name == ADAPTIVE_DRIVER and adaptive.weight == 1.0
    assert record["best_candidate"] not in (WHOLE_HISTORY, COIN_FLIP) and len(record["base_rate_candidates"]) > 1
    assert base_rate > 0.5 and record["base_rate"] < 0.45  # the whole history still says "up"; lately it is down
    assert record["held_out_brier_gain"] > 0 and record["held_out_changes"] >= 30
    assert f"in use: {' + '.join(record['base_rate_candidates'])}" in adaptive.rationale
    probability = simulate(base_rate, drivers, n_samples=10_000, seed=0).probability
    assert probability == pytest.approx(record["probability_before_sampling"], abs=0.03)
    assert probability < 0.4


def test_in_a_stable_regime_the_whole_history_is_kept_nearly_everywhere():
    view = _walk(np.full(720, 0.7), seed=2)  # the same rate throughout: a recent window is only noise
    history = AdaptiveHistory.of(view.values, 1, ">", 0.0, 12.0)
    alone = ~history.in_use[1:, 120:].any(axis=0)
    assert alone.mean() > 0.8 and not history.in_use[history.names.index(COIN_FLIP)].any()
    assert np.abs(history.probability[120:] - 0.7).max() < 0.1


def test_every_row_of_the_history_uses_only_rows_up_to_it():
    view = _walk(np.r_[np.full(300, 0.65), np.full(200, 0.35)], seed=3)
    values = view.values.copy()
    values[[60, 61, 250]] = np.nan  # empty rows stay empty
    full = AdaptiveHistory.of(values, 3, ">=", 0.5, 12.0)
    for i in (45, 200, 251, 420, 500):
        cut = AdaptiveHistory.of(values[:i + 1], 3, ">=", 0.5, 12.0)
        for name in ("candidates", "in_use", "adaptive", "drift", "drift_on", "raw", "recalibrated",
                     "recalibration_on", "probability"):
            np.testing.assert_array_equal(getattr(full, name)[..., :i + 1], getattr(cut, name))


def test_the_rule_shared_across_origins_answers_as_if_cut_at_each_origin():
    view = _walk(np.r_[np.full(300, 0.6), np.full(200, 0.4)], seed=4)
    shared = AdaptiveRule(view, "monthly")
    for t in (100, 333, 480):
        cut = view.upto(t)
        assert shared(t, _next_month(cut)) == AdaptiveRule(cut, "monthly")(t, _next_month(cut))


def test_recalibration_is_monotone_fitted_on_earlier_outcomes_and_shrinks_overconfidence():
    rng = np.random.default_rng(5)
    raw = rng.uniform(0.1, 0.9, 3000)
    outcome = (rng.random(3000) < 0.5 + 0.5 * (raw - 0.5)).astype(float)  # raw claims twice the real spread
    usable = np.ones(3000, dtype=bool)
    fitted = Recalibration.of(raw, outcome, usable, 1, 261.0)
    assert 0.35 < fitted.slope[-1] < 0.65 and fitted.mean_outcome[-1] == pytest.approx(0.5, abs=0.05)
    assert np.all((fitted.slope >= 0) & (fitted.slope <= 1))
    mapped = fitted.apply(raw)
    assert np.mean((mapped[500:] - outcome[500:]) ** 2) < np.mean((raw[500:] - outcome[500:]) ** 2)
    flipped = outcome.copy()
    flipped[2000:] = 1 - flipped[2000:]  # later outcomes: the map at row 1999 must not move
    again = Recalibration.of(raw, flipped, usable, 1, 261.0)
    assert again.slope[2000] == fitted.slope[2000] and again.mean_outcome[2000] == fitted.mean_outcome[2000]
    assert again.slope[2500] != fitted.slope[2500]


def test_drivers_state_their_records_and_drift_and_recalibration_are_gated():
    view = _walk(np.full(30, 0.5), seed=6)  # too short for any held-out record
    base_rate, drivers, record = AdaptiveRule(view, "monthly")(len(view.values) - 1, _next_month(view))
    assert [d.name for d in drivers] == [ADAPTIVE_DRIVER, DRIFT_DRIVER, RECALIBRATION_DRIVER]
    assert all(d.weight == 0.0 and "failed" in d.rationale for d in drivers[1:])
    assert drivers[0].weight == 0.0 and record["base_rate_candidates"] == [WHOLE_HISTORY]
    assert record["probability_before_sampling"] == base_rate and not record["recalibrated"]


def test_the_vectorised_gate_is_the_record_s_verdict_and_a_higher_bar_passes_fewer_rows():
    rng = np.random.default_rng(7)
    gain = rng.normal(0.002, 0.05, 4000)
    usable = rng.random(4000) < 0.9
    sums = held_out_sums(gain, usable, 5, 261.0)
    changes, mean, se = held_out_stats(sums, 5)
    for i in (10, 400, 2500, 3999):
        record = held_out_record(sums[:, i], 5)
        assert (changes[i], mean[i], se[i]) == pytest.approx((record.changes, record.gain, record.gain_se))
        assert bool(held_out_gate_passed(sums, 5)[i]) == record.passed
    default, strict = held_out_gate_passed(sums, 5), held_out_gate_passed(sums, 5, z=1.0)
    assert np.all(default | ~strict) and strict.sum() < default.sum()
