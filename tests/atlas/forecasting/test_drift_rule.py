"""Rule v3 on synthetic series: the drift counts only after beating the base rate on held-out
earlier origins, the forecast is otherwise the base rate, and every row uses only rows up to it."""

from __future__ import annotations

from datetime import date, datetime, timezone

import numpy as np
import pytest

from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import (
    DRIFT_DRIVER,
    MIN_RECORD_CHANGES,
    DriftHistory,
    SeriesView,
    drivers_for,
)
from forum_atlas.forecasting.montecarlo import ForecastInputError, simulate


def _month_starts(n: int) -> np.ndarray:
    return (np.datetime64("1950-01", "M") + np.arange(n)).astype("datetime64[D]")


def _walk(steps: np.ndarray) -> SeriesView:
    return SeriesView(_month_starts(len(steps) + 1), np.concatenate([[100.0], 100.0 + np.cumsum(steps)]))


def _next_month_question(view: SeriesView) -> BoundQuestion:
    last, target = view.dates[-1].astype(date), (view.dates[-1].astype("datetime64[M]") + 1).astype(date)
    return BoundQuestion("k", "SYNTH", ">", target, datetime(2100, 1, 1, tzinfo=timezone.utc), reference_date=last)


def test_a_regime_change_the_drift_has_caught_counts_and_moves_the_forecast():
    rng = np.random.default_rng(1)
    rises_then_falls = np.concatenate([rng.normal(0.4, 1.0, 300), rng.normal(-0.4, 1.0, 300)])
    view = _walk(rises_then_falls)
    base_rate, [drift] = drivers_for(view, _next_month_question(view), "monthly")
    assert drift.name == DRIFT_DRIVER and drift.weight == 1.0
    assert 0.45 < base_rate < 0.55 and drift.effect < -0.3  # the whole history is balanced; recent months fell
    assert "passed" in drift.rationale and "earlier origins" in drift.rationale
    result = simulate(base_rate, [drift], n_samples=10_000, seed=0)
    assert result.probability < base_rate - 0.1


def test_without_a_held_out_record_the_forecast_is_exactly_the_base_rate():
    rng = np.random.default_rng(2)
    view = _walk(rng.normal(-0.5, 1.0, 30))  # 30 months: far fewer than MIN_RECORD_CHANGES earlier origins
    base_rate, [drift] = drivers_for(view, _next_month_question(view), "monthly")
    assert drift.weight == 0.0 and "failed" in drift.rationale and f"{MIN_RECORD_CHANGES:g} such changes" in \
        drift.rationale
    quantiles = simulate(base_rate, [drift], n_samples=1_000, seed=0).distribution.quantiles.values()
    assert all(q == pytest.approx(base_rate, abs=1e-6) for q in quantiles)  # every world has it (float32 draws)


def test_a_drift_that_did_not_beat_the_base_rate_on_earlier_origins_does_not_count():
    rng = np.random.default_rng(3)
    view = _walk(rng.normal(0.0, 1.0, 600))  # a fair coin throughout: the recent share is only noise
    history = DriftHistory.of(view.values, 1, ">", 0.0, 12.0)
    rows = np.arange(100, 601)
    weights = [drivers_for(view.upto(int(i)), _next_month_question(view.upto(int(i))), "monthly")[1][0].weight
               for i in rows[::25]]
    assert sum(weights) <= 2  # the gate stays shut nearly everywhere
    assert all(history.held_out(int(i)).changes >= MIN_RECORD_CHANGES for i in rows[rows > 200])


def test_every_row_of_the_history_uses_only_rows_up_to_it():
    rng = np.random.default_rng(4)
    values = 100.0 + np.cumsum(rng.normal(0.1, 1.0, 400))
    values[[50, 51, 200]] = np.nan  # empty rows stay empty
    full = DriftHistory.of(values, 3, ">=", 0.5, 12.0)
    for i in (40, 120, 201, 399):
        cut = DriftHistory.of(values[:i + 1], 3, ">=", 0.5, 12.0)
        for name in ("enough_history", "known_changes", "base", "drift", "drift_changes"):
            np.testing.assert_array_equal(getattr(full, name)[:i + 1], getattr(cut, name))
        assert full.held_out(i) == cut.held_out(i)


def test_the_rule_needs_one_horizon_of_changes():
    view = _walk(np.random.default_rng(5).normal(0.0, 1.0, 19))  # 20 rows: 8 twelve-month changes
    last = view.dates[-1].astype(date)
    question = BoundQuestion("k", "SYNTH", ">", (view.dates[-1].astype("datetime64[M]") + 12).astype(date),
                             datetime(2100, 1, 1, tzinfo=timezone.utc), reference_date=last)
    with pytest.raises(ForecastInputError, match="8 visible 12-period changes; the driver rule needs at least 12"):
        drivers_for(view, question, "monthly")
