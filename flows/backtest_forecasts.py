"""Backtest flow (issue 11): rolling-origin evaluation of the lane's driver rule on a stored series
vintage or a FRED CSV file; the summary, the reliability table and the reliability diagram are
published as Prefect artifacts (and as files when `out_dir` is given)."""

from __future__ import annotations

import base64
from datetime import date
from pathlib import Path
from typing import Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.forecasting.backtest import BacktestSpec, horizon_periods, read_series_file, run_backtest
from forum_atlas.tasks.forecasting import stored_backtest_source


class BacktestParameters(BaseModel):
    source: str = Field(min_length=1, description="a registered series id (its newest stored vintage) or a CSV path")
    horizon: str = Field(default="30d", pattern=r"^\d+[dmq]?$", description="30d, 1m, 1q or N periods of the series")
    every: int = Field(default=1, ge=1, le=100_000, description="an origin every K-th published observation")
    start: date | None = Field(default=None, description="first origin date (inclusive)")
    end: date | None = Field(default=None, description="last origin date (inclusive)")
    comparator: Literal[">", ">=", "<", "<="] = Field(default=">", description="the event: the value at the horizon "
                                                                            "compared with the threshold")
    threshold: float | None = Field(default=None, description="fixed threshold; empty = against the origin's value")
    rule: Literal["v4", "v3", "v2", "v1"] = Field(default="v4", description="v4 = the lane's rule; v3, v2 and v1 = "
                                                                            "the rules it replaced (issues 11, 27)")
    column: str | None = Field(default=None, description="column of a year/quarter table (default realgdp)")
    vintage_id: int | None = Field(default=None, description="stored vintage (default: newest) when source is an id")
    seed: int = Field(default=0, ge=0, lt=2**31, description="same seed, same numbers")
    out_dir: str | None = Field(default=None, description="also write backtest.md, backtest.json, reliability.png")


@flow(name="backtest-forecasts", log_prints=True)
def backtest_forecasts(params: BacktestParameters, database_block: AtlasDatabase | None = None) -> dict:
    """Rolling-origin backtest of the lane's rule (the run form shows these descriptions).

    Args:
        params: the series, horizon, origins and rule to evaluate
        database_block: the Forum Atlas Database block holding stored vintages; empty = the worker's ATLAS_* environment
    """
    path = Path(params.source)
    if path.is_file():
        series = read_series_file(path, params.column)
    else:
        series = stored_backtest_source(resolve_settings(database_block), params.source, params.vintage_id)
    spec = BacktestSpec(horizon=horizon_periods(params.horizon, series.frequency), every=params.every,
                        start=params.start, end=params.end, comparator=params.comparator,
                        threshold=params.threshold, rule=params.rule, seed=params.seed)
    result = run_backtest(series, spec)
    markdown = result.markdown()
    png = result.reliability_png()
    if png is not None:
        markdown += f"\n![reliability diagram](data:image/png;base64,{base64.b64encode(png).decode('ascii')})\n"
    create_markdown_artifact(key="forecast-backtest", markdown=markdown,
                             description=f"backtest of {result.rule_version} on {series.label}")
    if params.out_dir:
        result.write(Path(params.out_dir))
    summary = result.summary()
    print(f"backtest {series.label}: n = {summary.get('n')}, Brier {summary.get('brier')}, skill vs base rate "
          f"{summary.get('skill_vs_base_rate')}, vs 0.5 {summary.get('skill_vs_half')}, vs the best rolling window "
          f"in hindsight {summary.get('skill_vs_hindsight_window')}, ECE {summary.get('ece')}; last third: skill vs "
          f"base rate {summary.get('last_third_skill_vs_base_rate')}, ECE {summary.get('last_third_ece')} "
          f"({result.seconds:.1f} s)")
    return {k: v for k, v in summary.items() if k != "reliability_bins"}
