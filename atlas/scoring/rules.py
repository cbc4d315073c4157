"""The scoring rules, per forecast: the one place their formulas are written. Scoring (the versions in
`versions.py`, the metrics), the backtest and the forecasting rules' held-out records all call these.

- Brier: (p − o)², lower is better.
- Log: −ln(p) when the event happened, −ln(1 − p) when it did not (natural log, nats; lower is better),
  with p first clipped to [LOG_CLIP, 1 − LOG_CLIP] so that a wrong forecast of exactly 0 or 1 costs
  −ln(0.001) = 6.908 nats instead of infinity.

Both take floats or numpy arrays (broadcast as numpy does) and return the same shape.
"""

from __future__ import annotations

import numpy as np

LOG_CLIP = 0.001


def brier(probability, outcome):
    return (probability - outcome) ** 2


def log_score(probability, outcome):
    clipped = np.clip(probability, LOG_CLIP, 1.0 - LOG_CLIP)
    return -np.log(np.where(outcome == 1, clipped, 1.0 - clipped))
