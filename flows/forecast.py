"""Forecast flow (FC-1..3): drivers → evidence per driver → Monte-Carlo → published distribution.

A forecast requested here (CLI/API) is never bound, so it is published as unscoreable (FC-4/6).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.forecasting.montecarlo import Driver, check_base_rate, check_confidence_target
from forum_atlas.tasks import flow_run_id
from forum_atlas.tasks.forecasting import driver_evidence, propose_drivers, publish_forecast, run_monte_carlo
from forum_atlas.tasks.scoring import run_name_from


class DriverInput(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="short name of the driver")
    hypothesis: str = Field(min_length=1, max_length=2000, description="what would have to hold")
    effect: float = Field(ge=-20, le=20, description="shift of the event's log-odds if the hypothesis holds")
    effect_sd: float = Field(default=0.0, ge=0, description="uncertainty of that shift (log-odds)")
    weight: float = Field(default=1.0, ge=0, le=1, description="how much the driver counts, in [0, 1]")


class ForecastRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000, description="a yes/no question about the future")
    confidence_target: float = Field(default=0.9, gt=0, lt=1,
                                     description="in (0, 1); >= 0.9 draws 10,000 samples, else 1,000")
    base_rate: float = Field(default=0.5, gt=0, lt=1, description="prior probability of the event, in (0, 1)")
    drivers: list[DriverInput] | None = Field(default=None, max_length=50,
                                              description="empty = the configured LLM engine decides")
    seed: int | None = Field(default=None, ge=0, lt=2**63, description="empty = a fresh seed (recorded)")
    requested_via: Literal["api", "cli"] = Field(default="api", description="recorded on the forecast")


@flow(name="forecast", flow_run_name=run_name_from("forecast", "question", width=80), log_prints=True)
def forecast(request: ForecastRequest, database_block: AtlasDatabase | None = None,
             providers_block: AtlasProviders | None = None) -> dict:
    """Direct forecast: drivers, evidence per driver, Monte-Carlo, a published (never bound) distribution.

    Args:
        request: the question, its base rate and confidence target, and optionally the drivers.
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment.
        providers_block: the Forum Atlas Providers block (LLM and retrieval engines); empty = the environment.
    """
    check_confidence_target(request.confidence_target)  # bad input fails before any provider is called
    check_base_rate(request.base_rate)
    settings = resolve_settings(database_block, providers_block)
    issued_at = datetime.now(timezone.utc)
    supplied = [Driver(**d.model_dump()) for d in request.drivers] if request.drivers else None
    drivers, engine = propose_drivers(settings, request.question, request.base_rate, supplied)
    drivers, evidence_note = driver_evidence(settings, drivers)
    record = run_monte_carlo(request.question, base_rate=request.base_rate, drivers=drivers,
                             confidence_target=request.confidence_target, issued_at=issued_at,
                             requested_via=request.requested_via, engine={**engine, "evidence": evidence_note},
                             seed=request.seed)
    forecast_id = publish_forecast(settings, record, flow_run_id())
    summary = {"forecast_id": forecast_id, "state": "unscoreable", **record.summary()}
    create_markdown_artifact(key="forecast", markdown=_markdown(summary), description="published forecast")
    print(f"forecast {forecast_id}: p = {summary['probability']:.4f}, {summary['interval_method']} interval "
          f"[{summary['interval'][0]:.4f}, {summary['interval'][1]:.4f}] (ci_basis: {summary['ci_basis']})")
    return summary


def _markdown(summary: dict) -> str:
    quantiles = " | ".join(f"{k}: {v:.3f}" for k, v in summary["quantiles"].items())
    return (f"# Forecast {summary['forecast_id']}\n\n**{summary['question']}**\n\n"
            f"- probability: {summary['probability']:.4f} ({summary['n_samples']} samples, seed {summary['seed']})\n"
            f"- interval: [{summary['interval'][0]:.4f}, {summary['interval'][1]:.4f}] — `ci_basis: "
            f"{summary['ci_basis']}`. {summary['interval_wording']}\n"
            f"- distribution of the simulated probability: {quantiles}\n"
            f"- state: {summary['state']} (requested directly, so never bound and never scored)\n")
