"""Rule v8 (issue 41, second attempt): v4's departure from the uninformed forecast is kept in the proportion
Φ(β / se) — how sure its held-out record is that the departure points the right way; every row uses only the rows
up to it."""

from __future__ import annotations

import numpy as np
import pytest

from forum_atlas.forecasting.adaptive import AdaptiveHistory, AdaptiveRule
from forum_atlas.forecasting.confident import (
    CONFIDENT_DRIVER,
    ConfidentDeparture,
    ConfidentRule,
    confidence_fraction,
)
from forum_atlas.forecasting.earned import earned_fraction
from forum_atlas.forecasting.montecarlo import simulate
from tests.atlas.forecasting.test_adaptive_rule import _next_month, _walk
from tests.atlas.forecasting.test_earned_rule import _earned


def _confident(values: np.ndarray, horizon: int = 1,
               periods_per_year: float = 12.0) -> tuple[AdaptiveHistory, ConfidentDeparture]:
    return _earned(values, horizon, periods_per_year=periods_per_year, step=ConfidentDeparture)


def test_the_fraction_is_the_probability_that_the_slope_is_positive_and_zero_without_a_record():
    slope = np.array([2.0, 0.0, -2.0, 1.0, 1.0, 1.0])
    se = np.array([1.0, 1.0, 1.0, np.inf, 1.0, 0.5])
    changes = np.array([50.0, 50.0, 50.0, 50.0, 7.9, 8.0])
    fraction = confidence_fraction(slope, se, changes)
    np.testing.assert_allclose(fraction, [0.97725, 0.5, 0.02275, 0.0, 0.0, 0.97725], atol=1e-5)


def test_a_driftless_random_walk_keeps_about_half_of_a_small_departure():
    rng = np.random.default_rng(7)
    values = np.round(np.cumsum(rng.standard_normal(261 * 30)), 1)  # 30 years of a daily walk
    history, rule = _confident(values, horizon=21, periods_per_year=261.0)
    late = slice(261 * 10, None)
    assert 0.1 < np.mean(rule.fraction[late]) < 0.9
    departure_v4 = np.mean(np.abs(history.probability[late] - rule.uninformed[late]))
    departure_v8 = np.mean(np.abs(rule.probability[late] - rule.uninformed[late]))
    assert departure_v8 < departure_v4 and departure_v8 < 0.02


def test_a_strong_persistent_drift_keeps_its_departure_and_a_reversed_one_loses_it():
    rising = _walk(np.full(720, 0.75), seed=3).values  # 60 years, three months in four up
    history, rule = _confident(rising)
    late = slice(240, None)
    assert np.all(rule.fraction[late] > 0.95)
    np.testing.assert_allclose(rule.probability[late], history.probability[late], atol=0.02)


def test_a_departure_its_record_contradicts_is_dropped():
    x = np.tile([0.1, -0.1], 200)
    right_way = (x > 0).astype(float)
    usable = np.ones(len(x), dtype=bool)
    for outcome, expected in ((right_way, 1.0), (1 - right_way, 0.0)):
        slope, se, changes, _ = earned_fraction(x, outcome, np.full(len(x), 0.5), usable, 1, 12.0)
        assert confidence_fraction(slope, se, changes)[-1] == pytest.approx(expected, abs=1e-6)


# that later rows never move an earlier row is tested for v7 and v8 together in test_earned_rule.py


def test_the_rule_answers_as_v4_plus_a_stated_confidence_driver_as_if_cut_at_each_origin():
    view = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 3), seed=0)
    shared = ConfidentRule(view, "monthly")
    for t in (100, 300, len(view.values) - 1):
        cut = view.upto(t)
        question = _next_month(cut)
        answer = shared(t, question)
        assert answer == ConfidentRule(cut, "monthly")(t, question)
        v4 = AdaptiveRule(cut, "monthly")(t, question)
        assert answer.base_rate == v4.base_rate and answer.drivers[:-1] == v4.drivers
        driver = answer.drivers[-1]
        assert driver.name == CONFIDENT_DRIVER and "Φ(slope / se)" in driver.rationale
        u, f = answer.record["uninformed_forecast"], answer.record["confidence_fraction"]
        p4 = v4.record["probability_before_sampling"]
        assert answer.record["probability_before_sampling"] == pytest.approx(u + f * (p4 - u))
    probability = simulate(answer.base_rate, answer.drivers, n_samples=10_000, seed=0).probability
    assert probability == pytest.approx(answer.record["probability_before_sampling"], abs=0.03)
