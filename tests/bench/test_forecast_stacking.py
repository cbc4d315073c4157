"""The stacking step issue 27's fifth pass weighed (bench.forecast_fallback): the convex combination of the
whole-history rate, 0.5 and v4 with the least Brier on earlier origins, pulled toward the whole history by a
horizon-aware ridge, used only while its own record over v4 passes the gate; every row uses only the rows up
to it."""

from __future__ import annotations

import numpy as np
import pytest

from bench.forecast_stacking import Stacking, _simplex_least_squares


def test_the_simplex_least_squares_is_the_best_point_of_the_triangle():
    rng = np.random.default_rng(0)
    rows = 400
    a = rng.normal(size=(rows, 2, 2)) * rng.uniform(0.01, 1.0, (rows, 1, 1))
    h = a @ a.transpose(0, 2, 1)  # positive semi-definite, some nearly singular
    g = rng.normal(size=(rows, 2)) * rng.uniform(0.01, 1.0, (rows, 1))
    h[:5], g[:5] = 0.0, 0.0  # nothing to fit (the parts never differed): the whole history, b = 0
    b1, b2 = _simplex_least_squares(h[:, 0, 0], h[:, 0, 1], h[:, 1, 1], g[:, 0], g[:, 1])
    assert np.all((b1 >= 0) & (b2 >= 0) & (b1 + b2 <= 1 + 1e-12))
    assert np.all((b1[:5] == 0) & (b2[:5] == 0))
    grid = np.array([(x, y) for x in np.linspace(0, 1, 101) for y in np.linspace(0, 1, 101) if x + y <= 1 + 1e-12])

    def objective(p1, p2):
        return (h[:, 0, 0, None] * p1 ** 2 + 2 * h[:, 0, 1, None] * p1 * p2 + h[:, 1, 1, None] * p2 ** 2
                - 2 * g[:, 0, None] * p1 - 2 * g[:, 1, None] * p2)

    solved = objective(b1[:, None], b2[:, None])[:, 0]
    assert np.all(solved <= objective(grid[:, 0], grid[:, 1]).min(axis=1) + 1e-9)


def _parts(truth: str, n: int = 4000, seed: int = 0):
    """w off by 0.2, 0.5, and a p4 that moves; the outcome's true probability is one of them."""
    rng = np.random.default_rng(seed)
    whole = np.full(n, 0.7)
    p4 = np.clip(0.5 + 0.25 * np.sin(np.arange(n) / 40.0) + rng.normal(0, 0.05, n), 0.05, 0.95)
    true_p = {"whole": whole, "half": np.full(n, 0.5), "rule": p4}[truth]
    outcome = (rng.random(n) < true_p).astype(float)
    return p4, whole, outcome, np.ones(n, dtype=bool)


@pytest.mark.parametrize("truth, weight", [("half", "weight_half"), ("rule", "weight_rule"),
                                           ("whole", "weight_whole")])
def test_the_weights_find_the_forecast_that_is_right(truth, weight):
    p4, whole, outcome, usable = _parts(truth)
    stacking = Stacking.of(p4, whole, outcome, usable, 1, 12.0)
    assert getattr(stacking, weight)[-1000:].mean() > 0.8
    total = stacking.weight_whole + stacking.weight_half + stacking.weight_rule
    np.testing.assert_allclose(total, 1.0)
    low = np.minimum(np.minimum(whole, p4), 0.5)
    high = np.maximum(np.maximum(whole, p4), 0.5)
    assert np.all((stacking.stacked >= low - 1e-12) & (stacking.stacked <= high + 1e-12))
    # before any outcome is published, and while the gate fails, v4 is published unchanged
    assert stacking.stacked[0] == whole[0] and stacking.probability[0] == p4[0]
    assert np.array_equal(stacking.probability[~stacking.on], p4[~stacking.on])
    if truth == "rule":
        assert stacking.on.mean() < 0.01  # nothing beats v4 when v4 is right: the 1-SE gate holds nearly always
    else:
        assert stacking.on[-1] and np.mean((stacking.probability[-1000:] - outcome[-1000:]) ** 2) < np.mean(
            (p4[-1000:] - outcome[-1000:]) ** 2)


def test_the_ridge_counts_independent_changes_so_a_long_horizon_moves_the_weights_less():
    p4, whole, outcome, usable = _parts("half", n=600)
    short, long = (Stacking.of(p4, whole, outcome, usable, h, 12.0) for h in (1, 12))
    assert np.all(long.changes <= short.changes / 12 + 1e-12) and long.changes[-1] > 5
    # the same evidence counted as 12-period changes is worth a twelfth: less weight moves away from w
    assert long.weight_whole[200:].mean() > short.weight_whole[200:].mean() + 0.05
    flat = Stacking.of(p4, whole, outcome, usable, 1, 12.0, prior=1e6)
    assert np.all(flat.weight_whole > 0.99)


def test_later_outcomes_never_move_an_earlier_row():
    p4, whole, outcome, usable = _parts("half", seed=2)
    full = Stacking.of(p4, whole, outcome, usable, 3, 12.0)
    flipped = outcome.copy()
    flipped[3000:] = 1 - flipped[3000:]
    again = Stacking.of(p4, whole, flipped, usable, 3, 12.0)
    # origin s's outcome is published at s + h: rows up to 3002 cannot have read the flipped ones
    for name in ("weight_half", "weight_rule", "changes", "stacked", "record", "on", "probability"):
        np.testing.assert_array_equal(getattr(full, name)[..., :3003], getattr(again, name)[..., :3003])
    assert not np.array_equal(full.stacked[3003:], again.stacked[3003:])
