import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

from forum_atlas.scoring.rules import LOG_CLIP, brier, log_score

P = np.array([0.0, 0.1, 0.35, 0.5, 0.8, 1.0])
O = np.array([0, 1, 0, 1, 1, 1])


def test_brier_takes_floats_arrays_and_broadcasts():
    assert brier(0.8, 1) == pytest.approx(0.04)
    assert brier(0.3, 0.0) == pytest.approx(0.09)
    assert np.mean(brier(P, O)) == pytest.approx(brier_score_loss(O, P), abs=1e-15)
    rates = np.stack([P, np.full(len(P), 0.5)], axis=1)  # origin × candidate, as the backtest's windows
    assert brier(rates, O[:, None]).shape == (len(P), 2)
    assert brier(rates, O[:, None])[:, 1].tolist() == [0.25] * len(P)


def test_log_score_is_the_clipped_log_loss_per_forecast():
    clipped = np.clip(P, LOG_CLIP, 1 - LOG_CLIP)
    assert np.mean(log_score(P, O)) == pytest.approx(log_loss(O, clipped), abs=1e-12)
    assert float(log_score(0.0, 1)) == pytest.approx(-np.log(LOG_CLIP))
    assert float(log_score(1.0, 1)) == pytest.approx(-np.log(1 - LOG_CLIP))
