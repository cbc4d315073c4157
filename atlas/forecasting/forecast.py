"""Assemble a publishable forecast from a base rate and drivers (no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from forum_atlas.forecasting.interval import CI_BASIS
from forum_atlas.forecasting.montecarlo import (
    BIT_GENERATOR,
    Driver,
    SimulationResult,
    check_confidence_target,
    new_seed,
    samples_for,
    simulate,
)


@dataclass(frozen=True)
class ForecastRecord:
    question: str
    requested_via: str
    issued_at: datetime
    confidence_target: float
    drivers: tuple[Driver, ...]
    result: SimulationResult
    engine: dict

    def row(self) -> dict:
        """Column values for forum.forecasts."""
        r = self.result
        return {
            "question": self.question, "requested_via": self.requested_via, "issued_at": self.issued_at,
            "confidence_target": self.confidence_target, "n_samples": r.n_samples, "seed": r.seed,
            "base_rate": r.base_rate, "probability": r.probability, "ci_low": r.interval.low,
            "ci_high": r.interval.high, "ci_method": r.interval.method, "ci_basis": CI_BASIS,
            "distribution": {**r.distribution.as_dict(), "interval": r.interval.as_dict()},
            "drivers": [d.as_dict() for d in self.drivers],
            "engine": {**self.engine, "monte_carlo": r.version, "bit_generator": BIT_GENERATOR},
        }

    def summary(self) -> dict:
        r = self.result
        return {"question": self.question, "probability": r.probability, "ci_basis": CI_BASIS,
                "interval": [r.interval.low, r.interval.high], "interval_method": r.interval.method,
                "interval_wording": r.interval.wording, "n_samples": r.n_samples, "seed": r.seed,
                "quantiles": r.distribution.quantiles, "drivers": [d.name for d in self.drivers]}


def make_forecast(question: str, *, base_rate: float, drivers: Sequence[Driver], confidence_target: float,
                  issued_at: datetime, requested_via: str, engine: dict, seed: int | None = None) -> ForecastRecord:
    check_confidence_target(confidence_target)
    if not question.strip():
        raise ValueError("the question is empty")
    if issued_at.tzinfo is None:
        raise ValueError("issued_at must carry a timezone")
    result = simulate(base_rate, drivers, n_samples=samples_for(confidence_target),
                      seed=new_seed() if seed is None else seed)
    return ForecastRecord(question, requested_via, issued_at, confidence_target, tuple(drivers), result, engine)
