"""Rule v6's stability step (issue 27, sixth pass): the whole-history rate's departure from 0.5 is kept in
proportion to how steady it was across 5-year blocks of the history, v4's probability moves with it, and the
move is published only while it has paid on earlier origins; every row uses only the rows up to it."""

from __future__ import annotations

import numpy as np
import pytest

from forum_atlas.forecasting.adaptive import AdaptiveHistory, AdaptiveRule
from forum_atlas.forecasting.drivers import satisfied_changes
from forum_atlas.forecasting.montecarlo import simulate
from forum_atlas.forecasting.stable import (
    STABILITY_DRIVER,
    Stability,
    StableRule,
    block_standard_error,
    stable_rate,
)
from tests.atlas.forecasting.test_adaptive_rule import _next_month, _walk


def test_the_block_standard_error_counts_complete_blocks_known_at_each_row():
    satisfied = np.array([np.nan, 1, 1, 1, 0, 0, 0, 0, 1, 0, np.nan, 0, 1])
    blocks, se2 = block_standard_error(satisfied, 4)
    # block 0 (rows 0–3): 3 of 3; block 1 (rows 4–7): 0 of 4, complete at row 7; block 2 (rows 8–11): 1 of 3
    assert np.all(np.isinf(se2[:7])) and np.all(blocks[:7] == 0)
    assert se2[7] == pytest.approx(np.var([1.0, 0.0], ddof=1) / 2) and blocks[7] == 2
    assert np.all(se2[7:11] == se2[7])  # block 2 counts only once complete
    assert se2[11] == pytest.approx(np.var([1.0, 0.0, 1 / 3], ddof=1) / 3) and blocks[11] == 3
    assert se2[12] == se2[11]


def test_a_steady_departure_is_kept_and_one_the_regimes_disagree_on_is_shrunk_toward_half():
    whole = np.array([0.9, 0.6, 0.5, 0.4, 0.6])
    se2 = np.array([0.01 ** 2, 0.1 ** 2, 0.1 ** 2, 0.1 ** 2, np.inf])
    stable = stable_rate(whole, se2)
    assert stable[0] == pytest.approx(0.9, abs=1e-3)       # 40 standard errors from 0.5: kept
    assert stable[1] == pytest.approx(0.55)                 # one standard error: half of it kept
    assert stable[2] == 0.5 and stable[3] == pytest.approx(0.45)
    assert stable[4] == 0.6                                 # no standard error yet: w itself
    assert np.all(np.abs(stable - 0.5) <= np.abs(whole - 0.5))


def _stability(values: np.ndarray, horizon: int = 1) -> tuple[AdaptiveHistory, Stability]:
    history = AdaptiveHistory.of(values, horizon, ">", 0.0, 12.0)
    return history, Stability.of(history, satisfied_changes(values, horizon, ">", 0.0), 12.0)


def test_a_series_rising_in_every_regime_keeps_its_rate_and_one_whose_regimes_reverse_moves_toward_half():
    steady = _walk(np.full(720, 0.8), seed=0).values
    reversing = _walk(np.tile(np.r_[np.full(120, 0.7), np.full(120, 0.3)], 3), seed=0).values
    _, kept = _stability(steady)
    _, moved = _stability(reversing)
    late = slice(400, None)
    assert np.max(np.abs(kept.stable[late] - kept.whole[late])) < 0.01
    assert np.mean(np.abs(moved.stable[late] - 0.5)) < 0.6 * np.mean(np.abs(moved.whole[late] - 0.5))


def test_the_move_is_published_only_where_its_record_passed_and_is_v4_s_shifted_by_the_anchor():
    history, stability = _stability(_walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=0).values)
    p4 = history.probability
    assert stability.on.any() and not stability.on.all()
    np.testing.assert_array_equal(stability.probability[~stability.on], p4[~stability.on])
    np.testing.assert_allclose(stability.moved, np.clip(p4 + stability.stable - stability.whole, 0.005, 0.995))
    assert np.array_equal(stability.probability[stability.on], stability.moved[stability.on])


def test_later_rows_never_move_an_earlier_row():
    values = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=1).values
    planted = 400
    poisoned = values.copy()
    poisoned[planted:] += 50.0 * np.arange(len(values) - planted)  # every later change a rise
    (_, honest), (_, moved) = _stability(values, 3), _stability(poisoned, 3)
    for name in ("blocks", "block_se", "stable", "moved", "record", "on", "probability"):
        np.testing.assert_array_equal(getattr(honest, name)[..., :planted], getattr(moved, name)[..., :planted])
    assert not np.array_equal(honest.probability[planted:], moved.probability[planted:])


def test_the_rule_answers_as_v4_plus_a_stated_stability_driver_as_if_cut_at_each_origin():
    view = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=0)
    shared = StableRule(view, "monthly")
    for t in (100, 300, len(view.values) - 1):
        cut = view.upto(t)
        question = _next_month(cut)
        answer = shared(t, question)
        assert answer == StableRule(cut, "monthly")(t, question)
        v4 = AdaptiveRule(cut, "monthly")(t, question)
        assert answer.base_rate == v4.base_rate and answer.drivers[:-1] == v4.drivers
        driver = answer.drivers[-1]
        assert driver.name == STABILITY_DRIVER and "earlier origins" in driver.rationale
        assert ("passed" if driver.weight else "failed") in driver.rationale
        assert answer.record["stability_applied"] == bool(driver.weight)
        assert {"stable_base_rate", "stability_held_out_brier_gain", "best_candidate"} <= answer.record.keys()
    _, stability = _stability(view.values)
    t = int(np.flatnonzero(stability.on)[-1])
    answer = shared(t, _next_month(view.upto(t)))
    assert answer.record["stability_applied"] and answer.record["stable_base_rate"] == pytest.approx(
        float(stability.stable[t]))
    assert answer.record["probability_before_sampling"] == pytest.approx(float(stability.probability[t]))
    probability = simulate(answer.base_rate, answer.drivers, n_samples=10_000, seed=0).probability
    assert probability == pytest.approx(answer.record["probability_before_sampling"], abs=0.03)
