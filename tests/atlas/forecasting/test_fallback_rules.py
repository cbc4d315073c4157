"""The fallback rules `bench.forecast_fallback` weighed for issue 27 read earlier origins only, so
its pre-2015 table says nothing about what came after."""

from __future__ import annotations

import numpy as np

from bench.forecast_fallback import fallback_rules
from forum_atlas.forecasting.adaptive import AdaptiveHistory
from forum_atlas.forecasting.backtest import read_series_file
from forum_atlas.forecasting.drivers import origin_outcomes, satisfied_changes


def _rules(values: np.ndarray, horizon: int) -> dict[str, np.ndarray]:
    history = AdaptiveHistory.of(values, horizon, ">", 0.0, 12.0)
    outcome, usable = origin_outcomes(values, satisfied_changes(values, horizon, ">", 0.0), horizon,
                                      history.enough_history)
    return fallback_rules(history, outcome, usable, 12.0)


def test_a_planted_value_changes_no_rule_before_its_row(shared_data):
    values = read_series_file(shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv").view.values
    planted = 150
    poisoned = values.copy()
    poisoned[planted:] += 5.0  # a jump from row 150 on: every later change question sees a new regime
    honest, moved = _rules(values, 3), _rules(poisoned, 3)
    assert list(honest) == ["v4", "gate", "shrink", "recent sign", "leader", "equal mix", "strict gate", "soft drift",
                            "no drift", "widened", "tempered toward w", "widened, gated", "tempered toward w, gated"]
    for name in honest:
        assert np.array_equal(honest[name][:planted], moved[name][:planted]), name
    # the plant is really there: the rules read it from its row on
    assert any(not np.allclose(honest[name][planted:], moved[name][planted:]) for name in honest)


def test_each_rule_publishes_what_it_says():
    rng = np.random.default_rng(3)
    values = np.cumsum(rng.normal(0.05, 1.0, 600))  # a drifting series: the extras have something to find
    history = AdaptiveHistory.of(values, 3, ">", 0.0, 12.0)
    rules = _rules(values, 3)
    v4, whole = history.probability, history.candidates[0]
    assert np.array_equal(rules["v4"], v4)
    assert np.allclose(rules["equal mix"], (v4 + whole) / 2)
    for name in ("gate", "shrink", "recent sign", "leader", "strict gate", "widened", "tempered toward w",
                 "widened, gated", "tempered toward w, gated"):
        p = rules[name]
        assert np.all((p >= np.minimum(np.minimum(v4, whole), 0.5) - 1e-12)
                      & (p <= np.maximum(np.maximum(v4, whole), 0.5) + 1e-12)), name
    # the gates and the recent sign publish either v4 or the whole history, and use each somewhere
    for name in ("gate", "strict gate", "recent sign"):
        p = rules[name]
        assert np.all(np.isclose(p, v4) | np.isclose(p, whole)), name
    assert np.any(~np.isclose(rules["recent sign"], v4)) and np.any(~np.isclose(rules["recent sign"], whole))
    # a 1-SE bar is stricter than v4's 0.25 SE: the strict gate keeps v4 only where the gate does
    assert np.all(np.isclose(rules["strict gate"], whole) | np.isclose(rules["gate"], v4))
    # widening and tempering pull the log-odds toward 0.5 and toward w, never past them
    for name, centre in (("widened", np.full(len(v4), 0.5)), ("tempered toward w", whole)):
        assert np.all(np.abs(rules[name] - centre) <= np.abs(v4 - centre) + 1e-12), name
        assert np.all(np.sign(rules[name] - centre) * np.sign(v4 - centre) >= 0), name
    # the drift variants keep v4's other steps: until the drift first counts, all three publish the same
    first = int(np.argmax(history.drift_on))
    assert history.drift_on.any() and first > 0
    for name in ("no drift", "soft drift"):
        assert np.array_equal(rules[name][:first], v4[:first]), name
        assert not np.allclose(rules[name][first:], v4[first:]), name
