"""Rule v7 (issue 41): v4's departure from the uninformed forecast (0.5 less half the tie rate, for "higher than
at the origin") is kept only in the proportion its held-out record earned; every row uses only the rows up to it."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import numpy as np
import pytest

from forum_atlas.forecasting.adaptive import AdaptiveHistory, AdaptiveRule
from forum_atlas.forecasting.confident import ConfidentDeparture
from forum_atlas.forecasting.earned import (
    EARNED_DRIVER,
    EarnedDeparture,
    EarnedRule,
    earned_fraction,
    uninformed_rate,
)
from forum_atlas.forecasting.montecarlo import simulate
from tests.atlas.forecasting.test_adaptive_rule import _next_month, _walk


def _earned(values: np.ndarray, horizon: int = 1, comparator: str = ">", periods_per_year: float = 12.0,
            step=EarnedDeparture) -> tuple[AdaptiveHistory, EarnedDeparture | ConfidentDeparture]:
    """v4's history and the last step of v7 (or `step`: v8's) computed on it."""
    history = AdaptiveHistory.of(values, horizon, comparator, 0.0, periods_per_year)
    return history, step.of(history, comparator, 0.0, values, periods_per_year)


def test_the_uninformed_forecast_is_half_less_half_the_tie_rate_as_visible_at_each_row():
    values = np.array([1.0, 2.0, 2.0, 1.0, 1.0, 3.0, np.nan, 4.0])
    # 1-period changes: +1, 0, −1, 0, +2, (empty), (empty): ties 2 of 5 once all are visible
    u = uninformed_rate(values, 1, ">", 0.0)
    assert u[0] == 0.5                                  # no change visible yet
    assert u[1] == 0.5 and u[2] == pytest.approx(0.25)  # +1 then a tie: (1 − 1/2) / 2
    assert u[5] == pytest.approx(0.5 - 0.5 * 2 / 5)
    assert u[7] == u[5]                                 # changes with an empty end are dropped, never filled
    assert uninformed_rate(values, 1, ">=", 0.0)[5] == pytest.approx(0.5 + 0.5 * 2 / 5)
    assert uninformed_rate(values, 1, "<", 0.0)[5] == pytest.approx(u[5])
    # a fixed threshold: the share of X and of −X beyond it (changes +1, 0, −1, 0, +2 → 1 and 0 of 5 above 1.5)
    assert uninformed_rate(values, 1, ">", 1.5)[5] == pytest.approx((1 + 0) / 10)


def test_a_driftless_random_walk_gets_about_the_uninformed_forecast():
    rng = np.random.default_rng(7)
    values = np.round(np.cumsum(rng.standard_normal(261 * 30)), 1)  # 30 years of a daily walk, ties from rounding
    history, earned = _earned(values, horizon=21, periods_per_year=261.0)
    late = slice(261 * 10, None)
    ties = 0.5 - earned.uninformed[late]
    assert np.all(ties > 0) and np.all(ties < 0.05)
    assert np.mean(earned.fraction[late]) < 0.25
    departure_v4 = np.mean(np.abs(history.probability[late] - earned.uninformed[late]))
    departure_v7 = np.mean(np.abs(earned.probability[late] - earned.uninformed[late]))
    assert departure_v7 < 0.3 * departure_v4 and departure_v7 < 0.01


def test_a_strong_persistent_drift_earns_its_departure():
    view = _walk(np.full(720, 0.75), seed=3)  # 60 years, three months in four up
    history, earned = _earned(view.values)
    late = slice(240, None)
    assert np.all(earned.fraction[late] > 0.8)
    assert np.mean(earned.probability[late]) > 0.7
    np.testing.assert_allclose(earned.probability[late], history.probability[late], atol=0.05)


def test_the_fraction_is_zero_until_the_record_holds_enough_changes_and_never_outside_zero_one():
    x = np.tile([0.1, -0.1], 200)
    outcome = (x > 0).astype(float)
    usable = np.ones(len(x), dtype=bool)
    slope, se, changes, fraction = earned_fraction(x, outcome, np.full(len(x), 0.5), usable, 1, 12.0)
    assert np.all(fraction[changes < 8] == 0) and np.any(changes >= 8)
    assert np.all((fraction >= 0) & (fraction <= 1))
    assert fraction[-1] == pytest.approx(1.0, abs=0.01) and slope[-1] > 1   # outcomes follow the sign: kept whole
    _, _, _, against = earned_fraction(x, 1 - outcome, np.full(len(x), 0.5), usable, 1, 12.0)
    assert np.all(against == 0)  # a departure that pointed the wrong way earns nothing


@pytest.mark.parametrize("step", [EarnedDeparture, ConfidentDeparture], ids=["v7", "v8"])
def test_later_rows_never_move_an_earlier_row(step):
    values = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=1).values
    planted = 400
    poisoned = values.copy()
    poisoned[planted:] += 50.0 * np.arange(len(values) - planted)  # every later change a rise
    (_, honest), (_, moved) = _earned(values, 3, step=step), _earned(poisoned, 3, step=step)
    for name in ("uninformed", "slope", "slope_se", "record_changes", "fraction", "probability"):
        np.testing.assert_array_equal(getattr(honest, name)[:planted], getattr(moved, name)[:planted])
    assert not np.array_equal(honest.probability[planted:], moved.probability[planted:])


def test_the_rule_answers_as_v4_plus_a_stated_earned_departure_driver_as_if_cut_at_each_origin():
    view = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=0)
    shared = EarnedRule(view, "monthly")
    for t in (100, 300, len(view.values) - 1):
        cut = view.upto(t)
        question = _next_month(cut)
        answer = shared(t, question)
        assert answer == EarnedRule(cut, "monthly")(t, question)
        v4 = AdaptiveRule(cut, "monthly")(t, question)
        assert answer.base_rate == v4.base_rate and answer.drivers[:-1] == v4.drivers
        driver = answer.drivers[-1]
        assert driver.name == EARNED_DRIVER and "earlier origins" in driver.rationale
        assert {"uninformed_forecast", "earned_fraction", "earned_slope", "best_candidate"} <= answer.record.keys()
        u, f = answer.record["uninformed_forecast"], answer.record["earned_fraction"]
        p4 = v4.record["probability_before_sampling"]
        assert answer.record["probability_before_sampling"] == pytest.approx(u + f * (p4 - u))
    probability = simulate(answer.base_rate, answer.drivers, n_samples=10_000, seed=0).probability
    assert probability == pytest.approx(answer.record["probability_before_sampling"], abs=0.03)


def test_a_drift_steady_across_blocks_is_earned_before_the_record_could_earn_it_and_a_reversing_one_is_not():
    quarters = 200  # fifty years of a quarterly series rising in most quarters, asked two years ahead
    steady = _walk(np.full(quarters, 0.85), seed=5).values
    history, earned = _earned(steady, horizon=8, periods_per_year=4.0)
    late = slice(60, None)  # two 5-year blocks complete; the record holds fewer than 8 independent changes
    assert np.all(earned.record_changes[60:70] < 8) and np.all(earned.record_fraction[60:70] == 0)
    assert np.all(earned.drift_fraction[late] > 0.9) and np.all(earned.fraction >= earned.record_fraction)
    np.testing.assert_allclose(earned.probability[late], history.probability[late], atol=0.05)
    assert np.all(earned.drift_fraction[:39] == 0)  # fewer than two complete blocks of 20 quarters
    reversing = _walk(np.tile(np.r_[np.full(20, 0.9), np.full(20, 0.1)], 5), seed=5).values
    assert np.mean(_earned(reversing, horizon=8, periods_per_year=4.0)[1].drift_fraction[late]) < 0.3



def test_a_rule_keeps_the_few_question_shapes_it_was_last_asked(monkeypatch):
    view = _walk(np.full(300, 0.6), seed=2)
    computed = []
    original = AdaptiveHistory.of.__func__

    def counted(cls, values, horizon, *args):
        computed.append(horizon)
        return original(cls, values, horizon, *args)

    rule = EarnedRule(view, "monthly")
    questions = []
    for t in (200, 201, 202, 203):  # one and two months ahead, in turn
        for months in (1, 2):
            target = (view.dates[t].astype("datetime64[M]") + months).astype(date)
            questions.append((t, replace(_next_month(view.upto(t)), target_date=target)))
    expected = [EarnedRule(view, "monthly")(t, question) for t, question in questions]
    monkeypatch.setattr(AdaptiveHistory, "of", classmethod(counted))
    assert [rule(t, question) for t, question in questions] == expected
    assert computed == [1, 2]  # each shape computed once, not once per switch
