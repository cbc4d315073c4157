"""The LLM interface for forecasting: decompose a question into driver hypotheses.

Engines return `Driver`s (atlas.forecasting.montecarlo). A proposal from a model is validated
field by field; anything malformed is a ProviderBadResponse, never a silently empty list.
"""

from __future__ import annotations

from typing import Any, Protocol

from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError
from forum_atlas.providers import ProviderBadResponse

MAX_DRIVERS = 20


class DriverEngine(Protocol):
    name: str
    version: str

    def propose_drivers(self, question: str, *, base_rate: float) -> list[Driver]: ...


def drivers_from_payload(provider: str, payload: Any) -> list[Driver]:
    """`{"drivers": [{"name", "hypothesis", "effect", "effect_sd", "weight", "rationale"?}, ...]}`"""
    items = payload.get("drivers") if isinstance(payload, dict) else None
    if not isinstance(items, list) or not items:
        raise ProviderBadResponse(provider, "answer has no non-empty 'drivers' list")
    if len(items) > MAX_DRIVERS:
        raise ProviderBadResponse(provider, f"answer has {len(items)} drivers; at most {MAX_DRIVERS} are used")
    drivers = []
    for i, item in enumerate(items):
        try:
            drivers.append(Driver(
                name=str(item["name"]), hypothesis=str(item["hypothesis"]), effect=float(item["effect"]),
                effect_sd=float(item.get("effect_sd", 0.0)), weight=float(item["weight"]),
                rationale=str(item.get("rationale", "")),
            ))
        except (KeyError, TypeError, ValueError, ForecastInputError) as exc:
            raise ProviderBadResponse(provider, f"driver {i}: {exc}") from exc
    return drivers
