"""Forecast tasks: drivers, evidence per driver, Monte-Carlo, publish; and the lane's binding step."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from prefect import get_run_logger, task
from prefect.tasks import exponential_backoff

from forum_atlas.config import Settings
from forum_atlas.forecasting.backtest import SeriesSource
from forum_atlas.forecasting.binding import BindingError
from forum_atlas.forecasting.adaptive import ADAPTIVE_RULE_VERSION, adaptive_answer
from forum_atlas.forecasting.evidence import EvidenceSearch, attach_evidence
from forum_atlas.forecasting.forecast import ForecastRecord, make_forecast
from forum_atlas.forecasting.lane import LaneQuestion, bind_question, series_frequency, worth_fetching
from forum_atlas.forecasting.montecarlo import Driver, ForecastInputError, check_confidence_target
from forum_atlas.llm import make_driver_engine
from forum_atlas.providers import ProviderError
from forum_atlas.series.parsing import Observation
from forum_atlas.series.registry import SeriesRegistry
from forum_atlas.store import forecasts as repo
from forum_atlas.store.db import Connection, Database, shared_database
from forum_atlas.tasks.scoring import retry_transient_provider_errors

EVIDENCE_PER_DRIVER = 3


def evidence_search(settings: Settings) -> tuple[EvidenceSearch | None, str]:
    """The hybrid-retrieval function used for driver evidence, or None with the reason it is absent."""
    try:
        from forum_atlas.tasks.retrieval import search_passages  # the retrieval lane's plain function
    except ImportError as exc:
        return None, f"hybrid retrieval unavailable ({exc})"
    return (lambda query, limit: search_passages(settings, query, top_k=limit)), "hybrid retrieval"


def _with_evidence(settings: Settings, drivers: Sequence[Driver]) -> tuple[list[Driver], str]:
    search, note = evidence_search(settings)
    if search is None:
        return list(drivers), note
    try:
        return attach_evidence(drivers, search, per_driver=EVIDENCE_PER_DRIVER), note
    except ProviderError as exc:  # a typed degradation is recorded on the forecast, not hidden (RET-6)
        return list(drivers), f"{note} degraded: {exc.kind}: {exc.detail}"


@task(name="propose-drivers", retries=2, retry_delay_seconds=exponential_backoff(backoff_factor=1),
      retry_jitter_factor=0.5, retry_condition_fn=retry_transient_provider_errors, timeout_seconds=300)
def propose_drivers(settings: Settings, question: str, base_rate: float,
                    supplied: Sequence[Driver] | None) -> tuple[list[Driver], dict[str, Any]]:
    """Drivers supplied in the request win; otherwise the configured engine decomposes the question."""
    if supplied:
        return list(supplied), {"drivers": "supplied in the request"}
    engine = make_driver_engine(settings.llm, **({"model": settings.llm_model, "options": settings.llm_options}
                                                 if settings.llm == "openai" else {}))
    return engine.propose_drivers(question, base_rate=base_rate), {"drivers": f"{engine.name} {engine.version}"}


@task(name="driver-evidence", timeout_seconds=300)
def driver_evidence(settings: Settings, drivers: Sequence[Driver]) -> tuple[list[Driver], str]:
    return _with_evidence(settings, drivers)


@task(name="monte-carlo")
def run_monte_carlo(question: str, *, base_rate: float, drivers: Sequence[Driver], confidence_target: float,
                    issued_at: datetime, requested_via: str, engine: dict, seed: int | None) -> ForecastRecord:
    return make_forecast(question, base_rate=base_rate, drivers=drivers, confidence_target=confidence_target,
                         issued_at=issued_at, requested_via=requested_via, engine=engine, seed=seed)


@task(name="publish-forecast")
def publish_forecast(settings: Settings, record: ForecastRecord, run_id: str | None) -> int:
    """A direct (API/CLI) forecast: published, never bound, so it stays unscoreable (FC-4, FC-6)."""
    with shared_database(settings).transaction() as conn:
        return repo.insert_forecast(conn, record, run_id=run_id)


def series_registry(conn: Connection) -> SeriesRegistry:
    """The registered series (forum.series): the ids forecasts may be bound to."""
    return SeriesRegistry(repo.registered_series(conn))


def visible_at_issue(conn: Connection, spec: LaneQuestion, issued_at: datetime
                     ) -> tuple[dict[str, Any], list[Observation]]:
    """The newest vintage of the question's series fetched by the issue time, and its observations."""
    series_frequency(spec, series_registry(conn))
    vintage = repo.latest_vintage(conn, spec.series_id, as_of=issued_at)
    if vintage is None:
        raise BindingError(f"question {spec.key!r}: no vintage of {spec.series_id} fetched by "
                           f"{issued_at.isoformat()}; load one with `atlas series load`")
    return vintage, repo.vintage_observations(conn, vintage["vintage_id"])


def issue_bound_forecast(db: Database, spec: LaneQuestion, issued_at: datetime,
                         run_id: str | None, seed: int | None = None) -> dict[str, Any]:
    """Construct one lane forecast from the vintage visible at issue and bind it in the same
    transaction. Already bound (same key and target) → skipped, so re-running the lane adds nothing."""
    with db.transaction() as conn:
        vintage, observations = visible_at_issue(conn, spec, issued_at)
        registry = series_registry(conn)
        question = bind_question(spec, observations, issued_at, registry)
        if repo.binding_exists(conn, question.key, question.target_date):
            return {"key": spec.key, "target_date": question.target_date.isoformat(), "status": "already bound"}
        answer = adaptive_answer(observations, question, registry.info(spec.series_id).frequency)
        drivers, evidence_note = _with_evidence(db.settings, answer.drivers)
        record = make_forecast(question.text, base_rate=answer.base_rate, drivers=drivers,
                               confidence_target=spec.confidence_target, issued_at=issued_at, requested_via="lane",
                               seed=seed, engine={"drivers": ADAPTIVE_RULE_VERSION, "base_rate": answer.record,
                                                  "evidence": evidence_note, "issue_vintage": vintage["label"]})
        forecast_id = repo.insert_forecast(conn, record, run_id=run_id, binding=question,
                                           issue_vintage_id=vintage["vintage_id"])
    return {"key": spec.key, "status": "bound", "forecast_id": forecast_id, "question": question.text,
            "probability": record.result.probability, "deadline": question.deadline.isoformat(),
            "issue_vintage": vintage["label"]}


@task(name="check-lane-questions", task_run_name="check-lane-questions-{issued_at:%Y-%m-%d}")
def check_lane_questions(settings: Settings, questions: Sequence[LaneQuestion], issued_at: datetime) -> None:
    """Every question against the data visible at issue, before anything is bound: one bad question
    fails the run with nothing written, and the error lists them all."""
    problems = []
    with shared_database(settings).connection() as conn:
        registry = series_registry(conn)
        for spec in questions:
            try:
                check_confidence_target(spec.confidence_target)
                _, visible = visible_at_issue(conn, spec, issued_at)
                bind_question(spec, visible, issued_at, registry)
            except (BindingError, ForecastInputError) as exc:
                problems.append(str(exc))
    if problems:
        raise BindingError("the lane bound nothing: " + "; ".join(problems))


@task(name="series-to-fetch", task_run_name="series-to-fetch-{now:%Y-%m-%d}")
def series_to_fetch(settings: Settings, questions: Sequence[LaneQuestion], now: datetime) -> list[str]:
    """The series of the questions a new vintage could bind something for (lane.worth_fetching), judged on the
    stored data: one with no stored vintage, or a question that cannot be bound on it, is fetched too (the run
    then binds or explains on the fresh data)."""
    wanted = set()
    with shared_database(settings).connection() as conn:
        registry = series_registry(conn)
        for spec in questions:
            try:
                _, visible = visible_at_issue(conn, spec, now)
                question = bind_question(spec, visible, now, registry)
            except BindingError:
                wanted.add(spec.series_id)
                continue
            bound = repo.is_bound(conn, question.key, question.target_date)
            if worth_fetching(spec, question.target_date, bound, registry.info(spec.series_id).frequency, now):
                wanted.add(spec.series_id)
    skipped = sorted({spec.series_id for spec in questions} - wanted)
    if skipped:
        get_run_logger().info("not fetched: %s (every question of theirs is bound and no new period can have been "
                              "published)", ", ".join(skipped))
    return sorted(wanted)


@task(name="bind-question", task_run_name="bind-{spec.key}", timeout_seconds=300)
def bind_lane_question(settings: Settings, spec: LaneQuestion, issued_at: datetime, run_id: str | None
                       ) -> dict[str, Any]:
    result = issue_bound_forecast(shared_database(settings), spec, issued_at, run_id)
    get_run_logger().info("%s: %s (target %s)", spec.key, result["status"],
                          result.get("target_date") or result.get("deadline"))
    return result


@task(name="load-backtest-series", task_run_name="load-{series_id}")
def stored_backtest_source(settings: Settings, series_id: str, vintage_id: int | None) -> SeriesSource:
    """A stored vintage (default: the newest full one) of a registered series, for the backtest."""
    with shared_database(settings).connection() as conn:
        return repo.backtest_source(conn, series_id, vintage_id)
