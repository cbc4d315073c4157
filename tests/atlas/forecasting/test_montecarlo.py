"""Monte-Carlo (FC-1..3): sample counts, recorded seed, distribution, and the sampling interval's
definition and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from forum_atlas.forecasting.distribution import QUANTILE_LEVELS, quantiles_of_sorted, summarise
from forum_atlas.forecasting.interval import CI_BASIS, Z_95
from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError, samples_for, simulate

DRIVERS = [Driver("a", "h1", effect=0.8, effect_sd=0.6, weight=0.5),
           Driver("b", "h2", effect=-1.2, effect_sd=0.4, weight=0.7),
           Driver("c", "h3", effect=0.3, effect_sd=1.0, weight=0.2)]


def true_probability(base_rate: float, drivers: list[Driver]) -> float:
    """E[sigmoid(L)] with L ~ Normal(m, s²): the exact model mean, by quadrature."""
    m = math.log(base_rate / (1 - base_rate)) + sum(d.weight * d.effect for d in drivers)
    s = math.sqrt(sum((d.weight * d.effect_sd) ** 2 for d in drivers))
    density = lambda x: math.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))
    return integrate.quad(lambda x: density(x) / (1 + math.exp(-x)), m - 12 * s, m + 12 * s)[0]


@pytest.mark.parametrize("target, samples", [(0.9, 10_000), (0.95, 10_000), (0.8999, 1_000), (0.5, 1_000)])
def test_sample_count_follows_the_confidence_target(target, samples):
    assert samples_for(target) == samples


@pytest.mark.parametrize("target", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_confidence_target_outside_open_unit_interval_is_refused(target):
    with pytest.raises(ForecastInputError, match="strictly between 0 and 1"):
        samples_for(target)


def test_seed_replays_exactly_and_different_seeds_differ():
    first = simulate(0.3, DRIVERS, n_samples=10_000, seed=42)
    assert simulate(0.3, DRIVERS, n_samples=10_000, seed=42) == first
    assert simulate(0.3, DRIVERS, n_samples=10_000, seed=43).probability != first.probability


def test_interval_is_mean_plus_minus_196_sd_over_root_n_with_ddof_1():
    result = simulate(0.3, DRIVERS, n_samples=1_000, seed=7)
    worlds = np.random.Generator(np.random.SFC64(7)).standard_normal((1_000, 3), dtype=np.float32)
    shift = (worlds @ np.array([d.weight * d.effect_sd for d in DRIVERS], dtype=np.float32)).astype(np.float64)
    q = 1 / (1 + np.exp(-(math.log(0.3 / 0.7) + sum(d.weight * d.effect for d in DRIVERS) + shift)))
    half = Z_95 * np.std(q, ddof=1) / math.sqrt(1_000)
    assert result.probability == pytest.approx(q.mean(), abs=1e-12)  # the mean of the worlds' probabilities
    assert result.interval.method == "normal" and result.interval.basis == CI_BASIS == "monte_carlo_sampling_95"
    assert result.interval.low == pytest.approx(q.mean() - half, abs=1e-12)
    assert result.interval.high == pytest.approx(q.mean() + half, abs=1e-12)
    assert "not a statement of uncertainty about the world" in result.interval.wording


def test_without_a_driver_that_moves_a_world_the_estimate_is_exactly_the_base_rate():
    for base_rate in (1e-6, 0.1, 0.3, 0.7303, 0.97):
        unmoved = [Driver("off", "h", effect=0.8, effect_sd=0.5, weight=0.0), Driver("flat", "h", 0.0, 0.0, 1.0)]
        for drivers in ([], unmoved):
            result = simulate(base_rate, drivers, n_samples=1_000, seed=1)
            assert result.probability == base_rate  # no sampling noise around the rule's probability
            assert (result.interval.low, result.interval.high, result.interval.sd) == (base_rate, base_rate, 0.0)


def test_coverage_of_the_sampling_interval_is_about_95_percent():
    truth = true_probability(0.3, DRIVERS)
    runs = 1_000
    inside = sum(r.interval.low <= truth <= r.interval.high
                 for r in (simulate(0.3, DRIVERS, n_samples=1_000, seed=seed) for seed in range(runs)))
    coverage = inside / runs
    # binomial sd at 95 % over 1,000 runs is 0.69 points: accept about three sd either side
    assert 0.93 <= coverage <= 0.97, coverage


def test_point_estimate_converges_to_the_model_mean():
    truth = true_probability(0.3, DRIVERS)
    assert abs(simulate(0.3, DRIVERS, n_samples=10_000, seed=3).probability - truth) < 0.015


def test_drivers_move_the_estimate_in_the_direction_of_their_effect():
    up = simulate(0.3, [Driver("u", "up", 2.0, 0.1, 1.0)], n_samples=10_000, seed=5).probability
    down = simulate(0.3, [Driver("d", "down", -2.0, 0.1, 1.0)], n_samples=10_000, seed=5).probability
    half_weight = simulate(0.3, [Driver("u", "up", 2.0, 0.1, 0.5)], n_samples=10_000, seed=5).probability
    assert down < 0.3 < half_weight < up


def test_distribution_summary_matches_numpy():
    values = np.random.default_rng(0).beta(2, 5, 10_000)
    summary = summarise(values)
    np.testing.assert_allclose(list(summary.quantiles.values()), np.quantile(values, QUANTILE_LEVELS))
    counts, edges = np.histogram(values, bins=20, range=(0, 1))
    assert summary.histogram_counts == counts.tolist()
    np.testing.assert_allclose(summary.histogram_edges, edges)
    np.testing.assert_allclose(quantiles_of_sorted(np.sort(values), np.array([0.0, 1.0])), [values.min(), values.max()])


@pytest.mark.parametrize("bad", [dict(weight=1.5), dict(weight=-0.1), dict(effect=float("nan")), dict(effect_sd=-1)])
def test_bad_drivers_are_refused(bad):
    with pytest.raises(ForecastInputError):
        Driver(**{"name": "x", "hypothesis": "h", "effect": 0.1, **bad})
