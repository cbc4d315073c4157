"""The rolling-origin backtest on the real FRED files: visibility, resolution, determinism, metrics."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timezone

import numpy as np
import pytest

from forum_atlas.forecasting.backtest import (
    BacktestSpec,
    SeriesSource,
    block_bootstrap_skill,
    calibrated_eces,
    calibrated_outcomes,
    ece_bound,
    ece_if_calibrated,
    horizon_periods,
    origins_per_horizon,
    read_series_file,
    run_backtest,
)
from forum_atlas.forecasting.binding import BoundQuestion
from forum_atlas.forecasting.drivers import DriftRule, SeriesView, drivers_for
from forum_atlas.scoring.metrics import REPORT_BINS, accuracy_metrics, expected_calibration_error
from forum_atlas.series.parsing import SeriesFormatError


@pytest.fixture(scope="module")
def unrate(shared_data) -> SeriesSource:
    return read_series_file(shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv")


@pytest.fixture(scope="module")
def dgs10(shared_data) -> SeriesSource:
    return read_series_file(shared_data / "series" / "DGS10__fred_daily_1962-2021_oldformat.csv")


def _with_value(source: SeriesSource, when: date, value: float) -> SeriesSource:
    values = source.view.values.copy()
    values[np.flatnonzero(source.view.dates == np.datetime64(when))[0]] = value
    return replace(source, view=SeriesView(source.view.dates, values))


@pytest.mark.parametrize("rule", ["v6", "v5", "v4", "v3", "v2", "v1"])
def test_a_planted_future_value_changes_nothing_before_its_date(unrate, rule):
    spec = BacktestSpec(horizon=3, rule=rule)
    planted = date(2020, 6, 1)
    honest = run_backtest(unrate, spec)
    poisoned = run_backtest(_with_value(unrate, planted, 0.0), spec)  # June 2020 was 11.0
    before = [r for r in honest.rows if r.target < planted]
    assert len(before) > 100
    assert before == [r for r in poisoned.rows if r.target < planted]  # probabilities, base rates, outcomes
    # the plant is really there: questions that resolve on it, and forecasts issued after it, change
    assert [r for r in honest.rows if r.target >= planted] != [r for r in poisoned.rows if r.target >= planted]


def test_same_command_same_numbers_and_the_seed_is_the_only_randomness(unrate):
    spec = BacktestSpec(horizon=1, every=2)
    first, again = run_backtest(unrate, spec), run_backtest(unrate, spec)
    assert first.rows == again.rows and first.summary() == again.summary()
    other_seed = run_backtest(unrate, replace(spec, seed=7))
    assert [r.probability for r in other_seed.rows] != [r.probability for r in first.rows]
    assert [r.base_rate for r in other_seed.rows] == [r.base_rate for r in first.rows]


def test_an_empty_target_is_unresolvable_never_filled(unrate):
    result = run_backtest(unrate, BacktestSpec(horizon=1))
    [empty] = [r for r in result.rows if r.outcome is None]
    assert (empty.origin, empty.target) == (date(2025, 9, 1), date(2025, 10, 1))  # October 2025 never published
    assert result.metrics["unresolvable"] == 1 and result.metrics["n"] == len(result.rows) - 1
    assert date(2025, 10, 1) not in [r.origin for r in result.rows]  # nor is an empty row ever an origin


def test_threshold_questions_and_date_window(unrate):
    spec = BacktestSpec(horizon=1, comparator=">=", threshold=5.0, start=date(2015, 1, 1), end=date(2019, 12, 1))
    result = run_backtest(unrate, spec)
    assert (result.rows[0].origin, result.rows[-1].origin) == (date(2015, 1, 1), date(2019, 12, 1))
    by_date = dict(zip(unrate.view.dates.astype(date), unrate.view.values))
    assert all(r.outcome == int(by_date[r.target] >= 5.0) for r in result.rows)


def test_metrics_report_three_references_the_last_third_ece_and_an_exact_decomposition(unrate):
    result = run_backtest(unrate, BacktestSpec(horizon=3))
    m, resolved = result.metrics, [r for r in result.rows if r.outcome is not None]
    assert m["skill_vs_base_rate"] == pytest.approx(1 - m["brier"] / m["brier_base_rate"])
    assert m["skill_vs_half"] == pytest.approx(1 - m["brier"] / m["brier_half"])
    # the hardest reference: the rolling window with the lowest Brier over these very outcomes
    window_briers = [np.mean([(r.window_rates[w] - r.outcome) ** 2 for r in resolved]) for w in range(4)]
    assert m["brier_hindsight_window"] == pytest.approx(min(window_briers))
    assert m["skill_vs_hindsight_window"] == pytest.approx(1 - m["brier"] / min(window_briers))
    last_third = resolved[len(resolved) * 2 // 3:]
    assert m["last_third_n"] == len(last_third) and m["last_third_from"] == last_third[0].origin.isoformat()
    assert m["last_third_brier"] == pytest.approx(np.mean([(r.probability - r.outcome) ** 2 for r in last_third]))
    assert sum(m["base_rate_candidates"].values()) == len(result.rows)
    rule_brier = np.mean([(r.rule_probability - r.outcome) ** 2 for r in resolved])  # v4 before Monte-Carlo sampling
    assert m["skill_vs_base_rate_before_sampling"] == pytest.approx(1 - rule_brier / m["brier_base_rate"])
    bins = m["reliability_bins"]
    assert m["ece"] == pytest.approx(sum(b["n"] * abs(b["mean_forecast"] - b["observed_frequency"]) for b in bins)
                                     / m["n"])
    assert m["brier"] == pytest.approx(m["reliability"] - m["resolution"] + m["uncertainty"]
                                       + m["within_bin_variance"] - m["within_bin_covariance"])
    def floor(rows):  # the origins' rows in the series, so overlapping quarters share their path
        origins = np.array([r.origin for r in rows], dtype="datetime64[D]")
        return ece_if_calibrated(np.array([r.probability for r in rows]), np.searchsorted(unrate.view.dates, origins), 3)
    assert m["ece_if_calibrated"] == floor(resolved) and m["last_third_ece_if_calibrated"] == floor(last_third)
    assert m["ece_if_calibrated_p90"] > m["ece_if_calibrated"]
    assert m["ece_bound"] == max(0.05, m["ece_if_calibrated_p90"]) and m["calibrated"] == (m["ece"] <= m["ece_bound"])
    assert m["bootstrap_block_origins"] == 3  # monthly origins, a quarter ahead
    for key in ("skill_vs_half", "skill_vs_base_rate"):
        assert m[f"{key}_low"] < m[key] < m[f"{key}_high"]


def test_the_ece_noise_floor_is_what_calibrated_forecasts_show_and_real_miscalibration_exceeds_it():
    # one bin of n forecasts at p: the floor is E|ȳ − p| ≈ sqrt(2 p (1 − p) / (π n)) for a large n
    p, n = 0.3, 400
    floor = ece_if_calibrated(np.full(n, p), draws=4000)
    assert floor == pytest.approx(np.sqrt(2 * p * (1 - p) / (np.pi * n)), rel=0.05)
    assert floor == ece_if_calibrated(np.full(n, p), draws=4000)  # seeded: the same forecasts, the same floor
    # spread over more bins the same n carries more noise, and the floor shrinks with n
    spread = np.random.default_rng(1).uniform(0.05, 0.95, n)
    assert ece_if_calibrated(spread) > 2 * floor
    assert ece_if_calibrated(np.tile(spread, 25)) < ece_if_calibrated(spread) / 3
    # outcomes that really are Bernoulli(p) land near the floor; forecasts off by 0.1 land well above it
    rng = np.random.default_rng(2)
    forecasts = np.tile(spread, 10)
    outcomes = (rng.random(len(forecasts)) < forecasts).astype(np.float64)
    calibrated = expected_calibration_error(accuracy_metrics(forecasts, outcomes, bins=REPORT_BINS).decomposition)
    shifted = expected_calibration_error(
        accuracy_metrics(np.clip(forecasts + 0.1, 0, 1), outcomes, bins=REPORT_BINS).decomposition)
    assert calibrated < 2 * ece_if_calibrated(forecasts) < shifted


def test_the_floor_counts_overlapping_horizons_as_the_shared_path_they_are():
    p = np.random.default_rng(3).uniform(0.05, 0.95, 300)
    outcomes = calibrated_outcomes(p, np.arange(300), horizon=21, draws=4000)
    assert np.abs(outcomes.mean(axis=0) - p).max() < 0.03  # each origin still says yes with its probability
    # a day apart, 21-day changes share 20 of their 21 steps and their outcomes agree far more often than
    # independent ones would; 21 days apart they share none
    def agreement(o):
        return (o[:, :-1] == o[:, 1:]).mean()
    independent = agreement(calibrated_outcomes(p, draws=4000))
    assert agreement(outcomes) > independent + 0.1
    assert agreement(calibrated_outcomes(p, np.arange(300) * 21, horizon=21, draws=4000)) == pytest.approx(
        independent, abs=0.01)
    # 1,827 daily origins at one quarter hold ~28 independent outcomes: the floor is several times the naive one
    n = 1827
    naive, overlapping = ece_if_calibrated(np.full(n, 0.5)), ece_if_calibrated(np.full(n, 0.5), np.arange(n), 65)
    assert overlapping > 5 * naive
    assert overlapping == pytest.approx(np.sqrt(2 * 0.25 / (np.pi * 28)), rel=0.35)
    assert ece_if_calibrated(np.full(n, 0.5), np.arange(n) * 65, 65) == pytest.approx(naive, rel=0.25)


def test_the_floor_bound_is_its_90th_percentile_which_an_exact_forecaster_exceeds_one_time_in_ten():
    n, h = 1827, 65
    p = np.full(n, 0.5)
    eces = calibrated_eces(p, np.arange(n), h, draws=300)
    assert eces.mean() == ece_if_calibrated(p, np.arange(n), h, draws=300)
    p90 = float(np.quantile(eces, 0.9))
    assert p90 > 1.4 * eces.mean() and ece_bound(p90) == p90 > 0.05  # daily origins at 1q: above 0.05
    assert ece_bound(0.01) == 0.05
    # fresh exactly right outcomes (another seed) exceed the bound in about a tenth of the draws
    assert np.mean(calibrated_eces(p, np.arange(n), h, draws=2000, seed=9) > p90) == pytest.approx(0.1, abs=0.04)


def test_the_block_bootstrap_resamples_whole_horizons_so_shared_paths_widen_the_interval():
    assert origins_per_horizon(np.arange(0, 1000, 5), 65) == 13 and origins_per_horizon(None, 65) == 1
    rng = np.random.default_rng(4)
    n, h = 3000, 60
    # outcomes and forecasts in runs of h origins (a shared path), forecasts a little better than 0.5 on average
    outcome = np.repeat(rng.random(n // h) < 0.5, h).astype(np.float64)
    forecast = np.clip(0.5 + 0.1 * (2 * outcome - 1) + np.repeat(rng.normal(0, 0.15, n // h), h), 0.01, 0.99)
    loss, reference = (forecast - outcome) ** 2, (0.5 - outcome) ** 2
    point = 1 - loss.sum() / reference.sum()
    low, high = block_bootstrap_skill(loss, reference, h)
    naive_low, naive_high = block_bootstrap_skill(loss, reference, 1)
    assert low < point < high and naive_low < point < naive_high
    assert high - low > 3 * (naive_high - naive_low)
    assert block_bootstrap_skill(loss, reference, h) == (low, high)  # seeded
    assert block_bootstrap_skill(loss, np.zeros(n), h) is None and block_bootstrap_skill(loss[:0], loss[:0], h) is None


def test_daily_horizons_count_business_days_and_holidays_stay_missing(dgs10):
    assert dgs10.frequency == "daily"
    assert [horizon_periods(h, "daily") for h in ("30d", "1m", "1q", "5")] == [21, 22, 65, 5]
    assert [horizon_periods(h, "monthly") for h in ("30d", "1m", "1q", "12")] == [1, 1, 3, 12]
    with pytest.raises(ValueError, match="shorter than one period of a quarterly series"):
        horizon_periods("1m", "quarterly")
    result = run_backtest(dgs10, BacktestSpec(horizon=21, every=97, start=date(2000, 1, 1)))
    assert all(np.busday_count(r.origin, r.target) == 21 for r in result.rows)
    assert result.metrics["unresolvable"] == sum(r.outcome is None for r in result.rows) > 0  # holiday targets


def test_the_quarterly_macro_table_is_read_by_column(shared_data):
    path = shared_data / "series" / "statsmodels_macrodata_1959Q1-2009Q3.csv"
    gdp = read_series_file(path)
    assert (gdp.series_id, gdp.frequency, len(gdp.view.dates)) == ("REALGDP", "quarterly", 203)
    assert gdp.view.dates[0] == np.datetime64("1959-01-01") and gdp.view.dates[-1] == np.datetime64("2009-07-01")
    assert read_series_file(path, "unemp").view.values[0] == 5.8
    with pytest.raises(SeriesFormatError, match="'nope'"):
        read_series_file(path, "nope")


def test_the_lanes_rule_is_no_worse_than_the_base_rate_where_the_old_one_lost(dgs10):
    """Issue 11's finding, reproduced and fixed: on DGS10, 30 days ahead, v1 loses to a coin; over
    ~1,000 origins v3 and the lane's v4 meet the targets (skill vs base rate >= 0, ECE <= 0.05)."""
    spec = BacktestSpec(horizon=21, every=14)
    old, v3, new = (run_backtest(dgs10, replace(spec, rule=rule)) for rule in ("v1", "v3", "v4"))
    assert old.metrics["brier"] > 0.28 and old.metrics["skill_vs_half"] < 0
    assert new.rule_version == "series-adaptive-base-rate-v4" and new.metrics["n"] >= 1000
    for result in (v3, new):
        assert result.metrics["skill_vs_base_rate"] >= 0 and result.metrics["ece"] <= 0.05
    assert new.metrics["ece"] <= v3.metrics["ece"] + 0.005


def test_v3_reads_one_history_per_question_yet_answers_as_if_cut_at_each_origin(dgs10):
    """v3 computes its history once per question shape instead of at each origin: a planted future
    value moves nothing before it, and at every origin the shared rule gives exactly what the lane's
    `drivers_for` gives on the rows up to that origin (against the origin's value, and thresholds)."""
    spec = BacktestSpec(horizon=65, every=211, start=date(1990, 1, 1))
    planted = date(2005, 3, 1)
    honest, poisoned = run_backtest(dgs10, spec), run_backtest(_with_value(dgs10, planted, 0.0), spec)
    before = [r for r in honest.rows if r.target < planted]
    assert len(before) > 15 and before == [r for r in poisoned.rows if r.target < planted]
    assert honest.rows != poisoned.rows
    shared = DriftRule(dgs10.view, "daily")
    origins = np.flatnonzero(~np.isnan(dgs10.view.values))[3000:14000:1500]
    for t in origins:
        origin, target = dgs10.view.dates[t].astype(date), dgs10.view.dates[t + 21].astype(date)
        deadline = datetime(2100, 1, 1, tzinfo=timezone.utc)
        for question in (BoundQuestion("k", "DGS10", ">", target, deadline, reference_date=origin),
                         BoundQuestion("k", "DGS10", "<=", target, deadline, threshold=5.0)):
            assert shared(int(t), question) == drivers_for(dgs10.view.upto(int(t)), question, "daily")


def test_writes_markdown_json_and_a_reliability_png(unrate, tmp_path):
    paths = run_backtest(unrate, BacktestSpec(horizon=1)).write(tmp_path)
    assert paths["reliability"].read_bytes().startswith(b"\x89PNG")
    markdown = paths["markdown"].read_text()
    assert "cannot reproduce real-time revisions" in markdown
    assert "| last_third_ece |" in markdown and "| ece_if_calibrated |" in markdown
    assert "| ece_if_calibrated_p90 |" in markdown and "| calibrated |" in markdown
    assert "| skill_vs_half_low |" in markdown and "block bootstrap" in markdown
    assert "ECE bins" in markdown and "base-rate candidates" in markdown
