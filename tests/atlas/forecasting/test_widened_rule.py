"""Rule v5's widening (issue 27's fourth-pass candidate): it pulls v4's probability toward 0.5 only by a
temperature earlier outcomes chose, only while that has paid on earlier origins, and every row uses only
the rows up to it."""

from __future__ import annotations

import numpy as np
import pytest

from forum_atlas.forecasting.adaptive import AdaptiveHistory, AdaptiveRule
from forum_atlas.forecasting.drivers import MIN_RECORD_CHANGES
from forum_atlas.forecasting.montecarlo import simulate
from forum_atlas.forecasting.widened import TEMPERATURES, WIDENING_DRIVER, Widening, WidenedRule
from tests.atlas.forecasting.test_adaptive_rule import _next_month, _walk


def _forecasts(claimed_spread: float, n: int = 6000, seed: int = 0):
    """Forecasts p4 and outcomes whose true probability is 0.5 + claimed_spread·(p4 − 0.5): below 1, p4 claims
    more than it knows."""
    rng = np.random.default_rng(seed)
    p4 = rng.uniform(0.15, 0.85, n)
    outcome = (rng.random(n) < 0.5 + claimed_spread * (p4 - 0.5)).astype(float)
    return p4, outcome, np.ones(n, dtype=bool)


def test_an_overconfident_rule_is_widened_once_earlier_outcomes_show_it_and_it_pays():
    p4, outcome, usable = _forecasts(0.4)
    widening = Widening.of(p4, outcome, usable, 1, 12.0)
    assert np.all(widening.temperature[:int(MIN_RECORD_CHANGES)] == 1.0)  # no record yet: T = 1, p4 itself
    assert widening.on[-1] and widening.temperature[-1] == max(TEMPERATURES)
    late = slice(3000, None)
    assert np.mean((widening.probability[late] - outcome[late]) ** 2) < np.mean((p4[late] - outcome[late]) ** 2)
    # toward 0.5, never past it
    assert np.all(np.abs(widening.probability - 0.5) <= np.abs(p4 - 0.5) + 1e-12)
    assert np.all(np.sign(widening.probability - 0.5) == np.sign(p4 - 0.5))


def test_a_calibrated_rule_is_mostly_left_alone():
    p4, outcome, usable = _forecasts(1.0, seed=1)
    widening = Widening.of(p4, outcome, usable, 1, 12.0)
    assert widening.on.mean() < 0.2
    assert np.array_equal(widening.probability[~widening.on], p4[~widening.on])
    assert np.all(np.isin(widening.temperature, TEMPERATURES))


def test_later_outcomes_never_move_an_earlier_row():
    p4, outcome, usable = _forecasts(0.4, seed=2)
    full = Widening.of(p4, outcome, usable, 3, 12.0)
    flipped = outcome.copy()
    flipped[4000:] = 1 - flipped[4000:]
    again = Widening.of(p4, flipped, usable, 3, 12.0)
    # origin s's outcome is published at s + h: rows up to 4002 cannot have read the flipped ones
    for name in ("temperature", "widened", "record", "on", "probability"):
        np.testing.assert_array_equal(getattr(full, name)[..., :4003], getattr(again, name)[..., :4003])
    assert not np.array_equal(full.record[:, 4003:], again.record[:, 4003:])


def test_the_rule_answers_as_v4_plus_a_stated_widening_driver_as_if_cut_at_each_origin():
    # regimes that reverse every 8 years: v4's recent rates keep pointing the way the series just stopped going
    view = _walk(np.tile(np.r_[np.full(96, 0.7), np.full(96, 0.3)], 4), seed=3)
    shared = WidenedRule(view, "monthly")
    for t in (150, 500, len(view.values) - 1):
        cut = view.upto(t)
        question = _next_month(cut)
        answer = shared(t, question)
        assert answer == WidenedRule(cut, "monthly")(t, question)
        v4 = AdaptiveRule(cut, "monthly")(t, question)
        assert answer.base_rate == v4.base_rate and answer.drivers[:-1] == v4.drivers
        widening = answer.drivers[-1]
        assert widening.name == WIDENING_DRIVER and "earlier origins" in widening.rationale
        assert ("passed" if widening.weight else "failed") in widening.rationale
        assert answer.record["widened"] == bool(widening.weight)
        assert answer.record["widening_temperature"] in TEMPERATURES
    history = AdaptiveHistory.of(view.values, 1, ">", 0.0, 12.0)
    widening = Widening.of(history.probability, history.outcome, history.usable, 1, 12.0)
    assert widening.on.any()  # the case the step is for: it does turn on here
    t = int(np.flatnonzero(widening.on)[-1])
    answer = shared(t, _next_month(view.upto(t)))
    assert answer.record["widened"] and answer.record["probability_before_sampling"] == pytest.approx(
        float(widening.probability[t]))
    probability = simulate(answer.base_rate, answer.drivers, n_samples=10_000, seed=0).probability
    assert probability == pytest.approx(answer.record["probability_before_sampling"], abs=0.03)
