"""The rules `bench.forecast_fallback` weighed for issue 27 read earlier origins only, and the bench
cuts every series before 2015 first, so nothing after the cut reaches its tables or its choice."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bench.forecast_fallback import Tally, before_cut, choose, evaluate, fallback_rules
from bench.forecast_skill import CUT, _cells
from forum_atlas.forecasting.adaptive import AdaptiveHistory
from forum_atlas.forecasting.backtest import read_series_file
from forum_atlas.forecasting.drivers import SeriesView, origin_outcomes, satisfied_changes


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


def test_before_cut_keeps_exactly_the_rows_dated_before_the_cut(shared_data):
    dgs10 = read_series_file(shared_data / "series" / "DGS10__fred_daily_1962-2021_oldformat.csv")
    cut = before_cut(dgs10)
    kept = len(cut.view.dates)
    assert cut.view.dates[-1] < np.datetime64(CUT) <= dgs10.view.dates[kept]
    np.testing.assert_array_equal(cut.view.values, dgs10.view.values[:kept])


def test_nothing_dated_from_the_cut_on_reaches_the_tables_or_the_choice():
    honest = list(_cells())
    poisoned = []
    for label, series, horizon, h in honest:
        values = series.view.values.copy()
        after = series.view.dates >= np.datetime64(CUT)
        values[after] = values[after][::-1] * 3.0  # another history from the cut on
        poisoned.append((label, replace(series, view=SeriesView(series.view.dates, values)), horizon, h))
    assert any(not np.array_equal(a[1].view.values, b[1].view.values, equal_nan=True)
               for a, b in zip(honest, poisoned))
    (passes, at_cut), (again, again_at_cut) = evaluate(honest), evaluate(poisoned)
    assert passes.keys() == again.keys() and at_cut == again_at_cut
    for name, (rows, tallies) in passes.items():
        assert rows == again[name][0] and len(rows) > 30
        assert tallies == again[name][1]
        assert choose(tallies) == choose(again[name][1])


def test_choose_reads_the_shared_targets_then_the_unseen_period_misses_then_mean_skill():
    def tally(losses=2, over_v3=1, ece=0.04, misses=11, skill=0.01):
        return Tally(shared_losses=losses, ece_over_v3=over_v3, largest_ece=ece, misses=misses, shared_skill=[skill])

    assert choose({"v4": tally(), "a": tally(misses=10), "b": tally(misses=10, skill=0.02)}) == "b"
    assert choose({"v4": tally(), "a": tally(misses=3, over_v3=2), "b": tally(misses=3, losses=3),
                   "c": tally(misses=3, ece=0.06)}) == "v4"
    assert choose({"v4": tally(ece=0.06), "a": tally(ece=0.06)}) == "v4"  # none meets (a): v4 stays
