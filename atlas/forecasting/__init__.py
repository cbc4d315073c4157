"""Forecasting (FC-1..3): driver hypotheses, cited evidence per driver, a vectorised Monte-Carlo and
its published distribution with a 95 % Monte-Carlo sampling interval. Plain Python, no I/O."""

from forum_atlas.forecasting.interval import CI_BASIS, CI_WORDING
from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError, SimulationResult, samples_for, simulate

__all__ = ["CI_BASIS", "CI_WORDING", "Driver", "ForecastInputError", "SimulationResult", "samples_for", "simulate"]
