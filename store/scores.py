"""Set-based resolution and scoring of bound forecasts into PostgreSQL, and the Accuracy report.

Plain functions (no Prefect), so the CLI, the benchmark and the flows all run the same code:
COPY the due bindings out, resolve and score them as arrays (atlas.scoring), COPY the score rows
back, check the score table with great-expectations inside the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

import pandas as pd
import psycopg

from forum_atlas.scoring import SCORING_VERSION
from forum_atlas.scoring.batch import VintageData, reclassified, score_bindings, vintages_current_at
from forum_atlas.scoring.metrics import accuracy_metrics, log_skill
from forum_atlas.scoring.quality import QualityReport, ScoreQualityError, validate_current_scores
from forum_atlas.scoring.report import AccuracyReport, VersionSummary
from forum_atlas.scoring.versions import ScoringRule, scoring_rule
from forum_atlas.store import forecasts as repo
from forum_atlas.store.db import record_event

Mode = Literal["nightly", "backfill"]


@dataclass
class ScoringRun:
    mode: Mode
    as_of: datetime
    scoring_version: str
    due: int = 0
    scored: int = 0
    inserted: int = 0
    reproduced: int = 0
    resolved: int = 0
    unresolvable: int = 0
    waiting_for_data: int = 0   # due, but no vintage fetched after the deadline has the dates yet
    reclassified: int = 0       # mislabelled unresolvable by a night whose fetch failed, settled now
    vintages: dict[str, int] = field(default_factory=dict)  # series -> vintage_id used
    quality: QualityReport | None = None

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "quality"}
        data["as_of"] = self.as_of.isoformat()
        data["quality_checks"] = self.quality.checks if self.quality else []
        return data


class ScoringInputError(ValueError):
    """A scoring request that cannot be honoured as given; nothing is written."""


def _vintages_for(conn: psycopg.Connection, series_ids: list[str], as_of: datetime,
                  vintage_id: int | None) -> dict[str, VintageData]:
    if vintage_id is not None:
        chosen = repo.get_vintage(conn, vintage_id)
        if chosen is None:
            raise ScoringInputError(f"vintage {vintage_id} does not exist")
        if chosen["partial"]:
            raise ScoringInputError(f"vintage {vintage_id} ({chosen['series_id']} {chosen['label']}) is partial: it "
                                    "covers less than the vintage before it and is never used for resolution")
        return {chosen["series_id"]: repo.vintage_data(conn, chosen)}
    found = {}
    for series_id in series_ids:
        vintage = repo.latest_vintage(conn, series_id, as_of=as_of)
        if vintage is not None:
            found[series_id] = repo.vintage_data(conn, vintage)
    return found


def _deadline_vintages(conn: psycopg.Connection, due: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, VintageData]]:
    """`due` with each binding's deadline vintage (the newest full one of its series fetched by its deadline,
    NA if none was) in deadline_vintage_id, and the data of those vintages."""
    catalogue = repo.full_vintage_catalogue(conn, sorted(due["series_id"].unique()))
    due = due.assign(deadline_vintage_id=vintages_current_at(catalogue, due["series_id"], due["deadline"]))
    ids = sorted(int(v) for v in due["deadline_vintage_id"].dropna().unique())
    return due, {v: repo.vintage_data(conn, repo.get_vintage(conn, v)) for v in ids}


def _unsettled(conn: psycopg.Connection, due: pd.DataFrame, scoring_version: str) -> pd.DataFrame:
    """The due bindings the nightly run still has to resolve: a resolved one is never re-resolved."""
    current = repo.current_scores(conn, scoring_version)
    settled = set(current.loc[current["status"] == "resolved", "forecast_id"])
    return due[~due["forecast_id"].isin(settled)]


def series_due_tonight(conn: psycopg.Connection, *, as_of: datetime) -> list[str]:
    """The series the nightly run at `as_of` would resolve bindings of, in any version it keeps current: the ones
    worth a new vintage."""
    due = repo.due_bindings(conn, as_of=as_of)
    return sorted({series for version in repo.scoring_versions_in_use(conn)
                   for series in _unsettled(conn, due, version)["series_id"].unique()})


def run_scoring(conn: psycopg.Connection, *, mode: Mode, as_of: datetime | None = None,
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
    as_of = as_of or datetime.now(timezone.utc)
    if as_of.tzinfo is None:
        raise ScoringInputError("as_of must carry a timezone")
    if deadline_from and deadline_to and deadline_to <= deadline_from:
        raise ScoringInputError(f"empty range: {deadline_from.isoformat()} .. {deadline_to.isoformat()}")
    rule: ScoringRule = scoring_rule(scoring_version)
    run = ScoringRun(mode=mode, as_of=as_of, scoring_version=rule.version)
    due = repo.due_bindings(conn, as_of=as_of, deadline_from=deadline_from, deadline_to=deadline_to,
                            series_id=series_id)
    if mode == "nightly":
        due = _unsettled(conn, due, scoring_version)
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
    run.vintages = {s: v.vintage_id for s, v in vintages.items()}
    run.scored = len(scores)
    run.waiting_for_data = run.due - run.scored
    run.resolved = int((scores["status"] == "resolved").sum()) if len(scores) else 0
    run.unresolvable = run.scored - run.resolved
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


def _deadline_outcome_counts(resolved: pd.DataFrame) -> dict[str, int]:
    known = resolved["deadline_outcome"].notna()
    same = known & (resolved["deadline_outcome"] == resolved["outcome"]).fillna(False)
    return {"same": int(same.sum()), "revised since": int((known & ~same).sum()),
            "not known at the deadline": int((~known).sum())}


def accuracy_report(conn: psycopg.Connection, *, scoring_version: str = SCORING_VERSION,
                    fixed_base_rate: float = 0.5, now: datetime | None = None) -> AccuracyReport:
    """The Accuracy report of one scoring version (any registered one), with every version's summary beside."""
    rule = scoring_rule(scoring_version)
    counts = repo.state_counts(conn, scoring_version)
    current = repo.current_scores(conn, scoring_version)
    resolved = current[current["status"] == "resolved"]
    report = AccuracyReport(scoring_version=scoring_version, generated_at=now or datetime.now(timezone.utc),
                            counts=counts, last_bound_at=repo.last_bound_at(conn), metrics=None,
                            measure=rule.measure)
    if len(resolved):
        outcome = resolved["outcome"].to_numpy(dtype=float)
        report.metrics = accuracy_metrics(resolved["probability"].to_numpy(), outcome, fixed_base_rate=fixed_base_rate)
        if rule.measure == "log":
            report.log_score, report.log_skill = log_skill(resolved["log_score"].to_numpy(), outcome)
        if rule.records_deadline_vintage:
            report.deadline_outcomes = _deadline_outcome_counts(resolved)
    else:
        report.notes.append("no bound forecast has resolved yet: Brier and skill are not defined")
    if report.last_bound_at is None:
        report.notes.append("no forecast has ever been bound: the binding lane has not issued anything")
    report.versions = [VersionSummary(r.version, r.measure, bool(r.is_default), int(r.scored), int(r.resolved),
                                      None if pd.isna(r.mean_score) else float(r.mean_score))
                       for r in repo.version_summaries(conn).itertuples()]
    return report
