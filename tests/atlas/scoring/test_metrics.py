"""Brier, skill and the Murphy decomposition against sklearn and a hand computation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from forum_atlas.scoring.metrics import accuracy_metrics, brier_score, murphy_decomposition

# Discrete forecasts (as a forecaster rounding to tenths issues them) and their outcomes.
P = np.array([0.1, 0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9, 0.9, 0.9, 0.2])
O = np.array([0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 0])


def hand_decomposition(p, o):
    """Textbook Murphy (1973) by explicit loops over the distinct forecast values."""
    n, base = len(p), sum(o) / len(o)
    rel = res = 0.0
    for value in sorted(set(p)):
        members = [oi for pi, oi in zip(p, o) if pi == value]
        freq = sum(members) / len(members)
        rel += len(members) * (value - freq) ** 2
        res += len(members) * (freq - base) ** 2
    return rel / n, res / n, base * (1 - base)


def test_brier_matches_sklearn():
    assert brier_score(P, O) == pytest.approx(brier_score_loss(O, P), abs=1e-15)
    rng = np.random.default_rng(1)
    p, o = rng.random(5_000), rng.integers(0, 2, 5_000)
    assert brier_score(p, o) == pytest.approx(brier_score_loss(o, p), abs=1e-15)


def test_discrete_forecasts_decompose_exactly_as_by_hand():
    d = murphy_decomposition(P, O, bins="unique")
    rel, res, unc = hand_decomposition(P.tolist(), O.tolist())
    assert (d.reliability, d.resolution, d.uncertainty) == pytest.approx((rel, res, unc), abs=1e-15)
    assert d.within_bin_variance == 0 and d.within_bin_covariance == 0
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(brier_score_loss(O, P), abs=1e-15)


def test_equal_width_bins_keep_the_identity_with_within_bin_terms():
    rng = np.random.default_rng(2)
    p = rng.random(20_000)
    o = (rng.random(20_000) < p ** 1.3).astype(int)
    d = murphy_decomposition(p, o, bins=10)
    assert d.within_bin_variance > 0
    assert d.brier == pytest.approx(brier_score_loss(o, p), abs=1e-12)
    assert sum(b["n"] for b in d.bins) == 20_000 and len(d.bins) == 10
    # with discrete tenths in 10 bins each bin is one value, so it reduces to the classic form
    tenths = murphy_decomposition(P, O, bins=10)
    assert tenths.reliability == pytest.approx(hand_decomposition(P.tolist(), O.tolist())[0], abs=1e-15)


def test_skill_scores_against_climatology_and_a_fixed_base_rate():
    m = accuracy_metrics(P, O, fixed_base_rate=0.5)
    base = O.mean()
    assert m.brier_climatology == pytest.approx(brier_score_loss(O, np.full(len(O), base)))
    assert m.brier_fixed_base_rate == pytest.approx(brier_score_loss(O, np.full(len(O), 0.5)))
    assert m.skill_vs_climatology == pytest.approx(1 - brier_score_loss(O, P) / (base * (1 - base)))
    assert m.skill_vs_fixed_base_rate == pytest.approx(1 - brier_score_loss(O, P) / 0.25)
    d = murphy_decomposition(P, O)
    assert m.skill_vs_climatology == pytest.approx((d.resolution - d.reliability) / d.uncertainty)


def test_skill_is_undefined_when_the_reference_is_perfect():
    m = accuracy_metrics([0.8, 0.6], [1, 1], fixed_base_rate=1.0)
    assert m.skill_vs_climatology is None and m.skill_vs_fixed_base_rate is None


@pytest.mark.parametrize("p, o", [([0.5], [2]), ([1.5], [1]), ([], []), ([float("nan")], [1])])
def test_bad_inputs_are_refused(p, o):
    with pytest.raises(ValueError):
        brier_score(p, o)
