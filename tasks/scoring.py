"""Scoring tasks: fetch series vintages, resolve + score (nightly or backfill), the Accuracy report.

`run_scoring` is a plain function (no Prefect), so the benchmarks and the tasks run the same code: it reads rows
through store, resolves and scores them with atlas.scoring, and writes through store, in the caller's transaction."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import get_run_logger, task
from prefect.blocks.system import Secret
from prefect.tasks import exponential_backoff

from forum_atlas.blocks.settings import secret_value
from forum_atlas.config import Settings
from forum_atlas.providers import OutcomeKind, ProviderError, ProviderRateLimited, ProviderTimeout, ProviderUnavailable
from forum_atlas.scoring import DEGRADED, SCORING_VERSION
from forum_atlas.scoring.batch import VintageData, reclassified, score_bindings, vintages_current_at
from forum_atlas.scoring.quality import ScoreQualityError, validate_current_scores
from forum_atlas.scoring.reliability import reliability_png
from forum_atlas.scoring.report import AccuracyReport, accuracy_report
from forum_atlas.scoring.runs import (
    Mode,
    ScoringRun,
    check_chosen_vintage,
    checked_as_of,
    count_scores,
    unsettled,
)
from forum_atlas.scoring.versions import ScoringRule, scoring_rule
from forum_atlas.series.connectors import make_connector
from forum_atlas.series.coverage import VintageCoverageError, check_coverage
from forum_atlas.store import forecasts as repo
from forum_atlas.store.db import Connection, record_event, shared_database
from forum_atlas.tasks import mark_flow_run

FETCH_TIMEOUT_S = 20.0   # one HTTP request to FRED
_TRANSIENT = (ProviderTimeout, ProviderRateLimited, ProviderUnavailable)


def retry_transient_provider_errors(task, task_run, state) -> bool:
    """Prefect retry condition: retry a provider's timeout, rate limit or outage, never a bad answer or a
    refused key (retrying those only repeats the failure)."""
    return isinstance(state.data, _TRANSIENT)


def fred_api_key(secret: Secret | None) -> str | None:
    """The FRED API key from the Secret block the run picked, else $FRED_API_KEY."""
    return secret_value(secret) or os.environ.get("FRED_API_KEY") or None


DEGRADED_TAG = "degraded"


def run_name_from(prefix: str, *fields: str, width: int = 60) -> Callable[[], str]:
    """A flow_run_name callable: `prefix-<params.field>-…` (each value cut to `width`), or
    `prefix-live-<UTC date and time>` when the fields are empty (two nightlies of one day differ), so a run list
    tells replays, ranges and questions apart at a glance. It reads the run's parameters as given (a model, or
    the plain dict a deployment run starts with)."""
    def name() -> str:
        from prefect.runtime import flow_run

        model = next(iter(flow_run.parameters.values()), None)
        values = [model.get(f) if isinstance(model, dict) else getattr(model, f, None) for f in fields]
        shown = [str(v)[:width] for v in values if v not in (None, "")]
        return "-".join([prefix, *shown]) if shown else f"{prefix}-live-{datetime.now(timezone.utc):%Y-%m-%d-%H%M%SZ}"
    return name


@dataclass
class FetchOutcome:
    """What one series fetch did: a stored vintage (`ok`) or the typed reason there is none."""
    series_id: str
    kind: OutcomeKind
    vintage_id: int | None = None
    label: str | None = None
    partial: bool = False
    detail: str = ""


# The connector makes a single attempt: retries are Prefect's, so each one shows in the UI (AwaitingRetry).
@task(name="fetch-series", task_run_name="fetch-{series_id}", retries=2,
      retry_delay_seconds=exponential_backoff(backoff_factor=1), retry_jitter_factor=0.5,
      retry_condition_fn=retry_transient_provider_errors, timeout_seconds=FETCH_TIMEOUT_S + 30)
def fetch_series_vintage(settings: Settings, series_id: str, key_secret: Secret | None) -> FetchOutcome:
    """Fetch one series from FRED now (the API with a key, else the CSV export) and store it as a vintage
    (identical content is not stored twice). A fetch that covers less than the newest stored vintage (a
    truncated download, a publisher's outage) is kept as a partial vintage, never used for resolution."""
    # ATLAS_FRED_API_BASE / ATLAS_FRED_CSV_BASE point at a mirror (or a test server) instead of FRED.
    bases = {option: os.environ[variable] for option, variable in
             (("api_base", "ATLAS_FRED_API_BASE"), ("csv_base", "ATLAS_FRED_CSV_BASE")) if os.environ.get(variable)}
    source = make_connector("fred", api_key=fred_api_key(key_secret), attempts=1, timeout_s=FETCH_TIMEOUT_S, **bases)
    vintage = source.fetch(series_id)
    logger = get_run_logger()
    with shared_database(settings).transaction() as conn:
        try:
            vintage_id, partial = repo.store_vintage(conn, vintage, check_coverage=check_coverage)[0], False
        except VintageCoverageError as regressed:   # raised before anything of it is written
            vintage_id = repo.store_vintage(conn, vintage, check_coverage=check_coverage, partial=True)[0]
            partial = True
            logger.warning("stored as partial, not used for resolution: %s", regressed)
    logger.info("%s: vintage %s (%s, %d observations)%s", series_id, vintage_id, vintage.label,
                len(vintage.series.observations), " partial" if partial else "")
    return FetchOutcome(series_id, "ok", vintage_id, vintage.label, partial)


def fetch_series(settings: Settings, series_ids: list[str], key_secret: Secret | None) -> list[dict[str, Any]]:
    """Fetch every series, one task run each; a provider that stays unreachable after the retries is a typed
    outcome (unavailable, timeout, …) and the run goes on with the vintages it has. One after the other, in
    the flow's own thread: there the task's timeout can interrupt a hung call (in a pool thread it cannot)."""
    outcomes = []
    for series_id in series_ids:
        try:
            outcomes.append(fetch_series_vintage(settings, series_id, key_secret))
        except ProviderError as failed:
            get_run_logger().warning("%s not fetched, scoring on the stored vintages: %s", series_id, failed)
            outcomes.append(FetchOutcome(series_id, failed.kind, detail=failed.detail[:300]))
    return [asdict(outcome) for outcome in outcomes]


def publish_fetch_outcomes(outcomes: list[dict[str, Any]], key: str) -> None:
    from prefect.artifacts import create_table_artifact

    if outcomes:
        create_table_artifact(key=key, table=[{k: str(v) for k, v in o.items()} for o in outcomes],
                              description="series fetched from FRED: the stored vintage, or why there is none")


def degraded_final_state(fetched: list[dict[str, Any]], result: dict[str, Any]):
    """A nightly whose fetch failed scored on older vintages: what it resolved stands, but the forecasts
    that needed the missing vintage stayed pending. Then the run ends in a Completed-type state named
    Degraded (the UI shows the name; its event, prefect.flow-run.Degraded, fires the nightly alert) with a
    `nightly-degraded` markdown artifact that says which series and why, its name suffixed `-degraded` and the
    tag `degraded`; otherwise None."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.states import Completed

    failed = [o for o in fetched if o["kind"] != "ok" or o["partial"]]
    if not failed:
        return None
    why = {o["series_id"]: "partial (covers less than the stored vintage)" if o["kind"] == "ok" else o["kind"]
           for o in failed}
    lines = [f"- {o['series_id']}: {why[o['series_id']]}" + (f" - {o['detail']}" if o["detail"] else "")
             for o in failed]
    message = (f"degraded: {len(failed)} of {len(fetched)} series not fetched in full "
               f"({', '.join(o['series_id'] for o in failed)}); "
               f"{result['run']['waiting_for_data']} due forecast(s) stay pending: waiting for data")
    create_markdown_artifact(key="nightly-degraded", description="why this nightly is degraded",
                             markdown="\n".join(["# Nightly degraded", "", message, "", *lines]))
    get_run_logger().warning(message)
    # a Completed-type state is green in the UI whatever its name: the run's name and a tag say it too (the run
    # list's Tags filter, `degraded`, lists them)
    from prefect.runtime import flow_run

    mark_flow_run(name=f"{flow_run.name}-degraded", tags=(DEGRADED_TAG,))
    return Completed(name=DEGRADED, message=message, data=result)


def _vintages_for(conn: Connection, series_ids: list[str], as_of: datetime,
                  vintage_id: int | None) -> dict[str, VintageData]:
    if vintage_id is not None:
        chosen = repo.get_vintage(conn, vintage_id)
        check_chosen_vintage(vintage_id, chosen)
        return {chosen["series_id"]: repo.vintage_data(conn, chosen)}
    found = {}
    for series_id in series_ids:
        vintage = repo.latest_vintage(conn, series_id, as_of=as_of)
        if vintage is not None:
            found[series_id] = repo.vintage_data(conn, vintage)
    return found


def _deadline_vintages(conn: Connection, due: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, VintageData]]:
    """`due` with each binding's deadline vintage (the newest full one of its series fetched by its deadline,
    NA if none was) in deadline_vintage_id, and the data of those vintages."""
    catalogue = repo.full_vintage_catalogue(conn, sorted(due["series_id"].unique()))
    due = due.assign(deadline_vintage_id=vintages_current_at(catalogue, due["series_id"], due["deadline"]))
    ids = sorted(int(v) for v in due["deadline_vintage_id"].dropna().unique())
    return due, {v: repo.vintage_data(conn, repo.get_vintage(conn, v)) for v in ids}


def series_due_tonight(conn: Connection, *, as_of: datetime) -> list[str]:
    """The series the nightly run at `as_of` would resolve bindings of, in any version it keeps current: the ones
    worth a new vintage."""
    due = repo.due_bindings(conn, as_of=as_of)
    return sorted({series for version in repo.scoring_versions_in_use(conn)
                   for series in unsettled(due, repo.current_scores(conn, version))["series_id"].unique()})


def run_scoring(conn: Connection, *, mode: Mode, as_of: datetime | None = None,
                vintage_id: int | None = None, series_id: str | None = None,
                deadline_from: datetime | None = None, deadline_to: datetime | None = None,
                scoring_version: str = SCORING_VERSION, run_id: str | None = None,
                validate: bool = True) -> ScoringRun:
    """Resolve and score bound forecasts past their deadline at `as_of`, in the caller's transaction.

    nightly: forecasts with no current score, or whose current score is unresolvable, are scored on
             the newest vintage of their series fetched by `as_of`; a resolved forecast is not
             re-resolved by the nightly run (its score would silently change with revisions).
    Either way a forecast whose vintage was fetched by its deadline and lacks a date it needs gets no row
    (pending: waiting for data), and one that an older run mislabelled so and that is settled now is named
    in a FORECASTS_RECLASSIFIED event with the reason.
    backfill: every forecast with a deadline in [deadline_from, deadline_to) is scored on the chosen
             vintage (or the newest by `as_of`): a vintage not used before adds a new score row and
             keeps the old; one used before must reproduce the stored row exactly.
    """
    as_of = checked_as_of(as_of, deadline_from, deadline_to)
    rule: ScoringRule = scoring_rule(scoring_version)
    run = ScoringRun(mode=mode, as_of=as_of, scoring_version=rule.version)
    due = repo.due_bindings(conn, as_of=as_of, deadline_from=deadline_from, deadline_to=deadline_to,
                            series_id=series_id)
    if mode == "nightly":
        due = unsettled(due, repo.current_scores(conn, scoring_version))
    run.due = len(due)
    vintages = _vintages_for(conn, sorted(due["series_id"].unique()), as_of, vintage_id)
    if vintage_id is not None:
        due = due[due["series_id"].isin(list(vintages))]
        run.due = len(due)
    deadline_vintages = None
    if rule.records_deadline_vintage:
        due, deadline_vintages = _deadline_vintages(conn, due)
    scores = score_bindings(due, vintages, rule, deadline_vintages)
    mislabelled = repo.mislabelled_unresolvable(conn, scoring_version)   # read before this run's rows land
    count_scores(run, vintages, scores)
    counts = repo.write_scores(conn, scores, run_id=run_id)
    run.inserted, run.reproduced = counts["inserted"], counts["reproduced"]
    changes = reclassified(mislabelled, scores)
    if changes:
        run.reclassified = len(changes)
        record_event(conn, "FORECASTS_RECLASSIFIED", {"scoring_version": scoring_version, "forecasts": changes},
                     run_id=run_id)
    if validate and run.inserted:
        run.quality = validate_current_scores(repo.current_scores(conn, scoring_version))
        if not run.quality.success:
            raise ScoreQualityError(run.quality)  # the caller's transaction rolls back: nothing written
    return run


@task(name="series-due", task_run_name="series-due-{as_of:%Y-%m-%d}")
def series_due(settings: Settings, as_of: datetime) -> list[str]:
    """The series with bindings the nightly run at `as_of` still has to resolve."""
    with shared_database(settings).connection() as conn:
        return series_due_tonight(conn, as_of=as_of)


@task(name="scoring-versions-in-use")
def scoring_versions_in_use(settings: Settings) -> list[str]:
    """The versions the nightly keeps current: the default, then every version that has been backfilled."""
    with shared_database(settings).connection() as conn:
        return repo.scoring_versions_in_use(conn)


@task(name="resolve-and-score", task_run_name="{mode}-score-{scoring_version}-{as_of:%Y-%m-%d}")
def resolve_and_score(settings: Settings, *, mode: str, as_of: datetime, vintage_id: int | None = None,
                      series_id: str | None = None, deadline_from: datetime | None = None,
                      deadline_to: datetime | None = None, run_id: str | None = None,
                      scoring_version: str = SCORING_VERSION) -> ScoringRun:
    with shared_database(settings).transaction() as conn:
        run = run_scoring(conn, mode=mode, as_of=as_of, vintage_id=vintage_id, series_id=series_id,
                                 deadline_from=deadline_from, deadline_to=deadline_to, run_id=run_id,
                                 scoring_version=scoring_version)
    get_run_logger().info("%s scoring (%s) at %s: %d due, %d scored, %d new rows", mode, scoring_version,
                          as_of.isoformat(), run.due, run.scored, run.inserted)
    return run


@task(name="accuracy-report", task_run_name="accuracy-report-{scoring_version}")
def build_accuracy_report(settings: Settings, *, fixed_base_rate: float, out_dir: str | None,
                          scoring_version: str = SCORING_VERSION) -> tuple[AccuracyReport, dict[str, str]]:
    with shared_database(settings).connection() as conn:
        report = accuracy_report(repo.accuracy_rows(conn, scoring_version), fixed_base_rate=fixed_base_rate)
    files = {k: str(v) for k, v in report.write(Path(out_dir)).items()} if out_dir else {}
    return report, files


def publish_report_artifacts(report: AccuracyReport, key_prefix: str = "accuracy") -> None:
    """Table, markdown and (once anything resolved) the reliability diagram as image artifacts in the
    Prefect UI (FC-8). The image travels inside the artifact as a data: URL, so no report_dir, file server
    or object store is needed to see it."""
    from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact

    create_table_artifact(key=f"{key_prefix}-table",
                          table=[{"measure": k.strip(), "value": v} for k, v in report.rows()],
                          description="Accuracy: live state counts, last bound forecast, Brier and skill")
    markdown = report.markdown()
    if report.metrics is not None:
        png = reliability_png(report.metrics.decomposition)
        image_url = f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}"
        create_image_artifact(image_url=image_url, key=f"{key_prefix}-reliability",
                              description="reliability diagram of the resolved bound forecasts")
        markdown += f"\n![reliability diagram]({image_url})\n"
    create_markdown_artifact(key=f"{key_prefix}-report", markdown=markdown,
                             description="Accuracy report with the Murphy decomposition by bin")
