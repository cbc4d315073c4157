"""The Accuracy report (FC-8): live state counts, last bound forecast, Brier, skill, Murphy
decomposition and a reliability diagram — as a table, markdown and files."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from forum_atlas.scoring.metrics import AccuracyMetrics, accuracy_metrics, log_skill
from forum_atlas.scoring.reliability import reliability_png
from forum_atlas.scoring.versions import scoring_rule

# waiting_for_data: bound, deadline passed, and no vintage fetched after the deadline has the dates yet
# (a failed fetch leaves forecasts here, never unresolvable)
STATES = ("unscoreable", "pending", "waiting_for_data", "resolved", "unresolvable")
STATE_LABELS = {"pending": "pending: deadline ahead", "waiting_for_data": "pending: waiting for data"}


def _fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class VersionSummary:
    """One registered scoring version's current scores, for the report's comparison of versions."""
    version: str
    measure: str
    is_default: bool
    scored: int
    resolved: int
    mean_score: float | None   # over the resolved, in the version's measure

    def row(self) -> tuple[str, str]:
        default = " (default)" if self.is_default else ""
        return (f"version {self.version}{default}",
                f"{self.scored} scored, {self.resolved} resolved, mean {self.measure} {_fmt(self.mean_score)}")


@dataclass
class AccuracyReport:
    scoring_version: str
    generated_at: datetime
    counts: dict[str, int]                  # by state, from the database
    last_bound_at: datetime | None          # issue time of the newest bound forecast
    metrics: AccuracyMetrics | None         # None until something has resolved (Brier metrics of p and outcome)
    notes: list[str] = field(default_factory=list)
    measure: str = "brier"                  # what the version scores (atlas.scoring.versions)
    log_score: float | None = None          # a log version: mean log score (nats) of the resolved
    log_skill: float | None = None          # ... and its skill against climatology's log score
    # a version that records the deadline vintage: resolved forecasts whose outcome on it was the same, revised
    # since, or not known at the deadline
    deadline_outcomes: dict[str, int] | None = None
    versions: list[VersionSummary] = field(default_factory=list)

    @property
    def scoreable(self) -> int:
        return sum(self.counts.get(s, 0) for s in STATES if s != "unscoreable")

    def rows(self) -> list[tuple[str, str]]:
        rows = [("scoring version", f"{self.scoring_version} ({self.measure})"),
                ("forecasts", str(sum(self.counts.values()))),
                ("scoreable (bound)", str(self.scoreable))]
        rows += [(f"  {STATE_LABELS.get(state, state)}", str(self.counts.get(state, 0))) for state in STATES]
        rows.append(("last bound forecast", self.last_bound_at.isoformat() if self.last_bound_at else "none yet"))
        m = self.metrics
        if m is None:
            rows.append(("mean Brier", "n/a (nothing resolved yet)"))
            return rows + [v.row() for v in self.versions]
        d = m.decomposition
        if self.measure == "log":
            rows += [("mean log score (nats)", _fmt(self.log_score)),
                     ("log-score skill vs climatology", _fmt(self.log_skill))]
        if self.deadline_outcomes is not None:
            rows += [(f"  outcome on the deadline vintage: {what}", str(n)) for what, n in self.deadline_outcomes.items()]
        rows += [
            ("resolved and scored", str(m.n_resolved)),
            ("mean Brier", _fmt(m.brier)),
            ("observed base rate", _fmt(m.base_rate)),
            ("BSS vs climatology", _fmt(m.skill_vs_climatology)),
            (f"BSS vs fixed base rate {m.fixed_base_rate:g}", _fmt(m.skill_vs_fixed_base_rate)),
            ("reliability (REL)", _fmt(d.reliability)),
            ("resolution (RES)", _fmt(d.resolution)),
            ("uncertainty (UNC)", _fmt(d.uncertainty)),
            ("within-bin variance − covariance", _fmt(d.within_bin_variance - d.within_bin_covariance)),
            ("binning", d.binning),
        ]
        return rows + [v.row() for v in self.versions]

    def markdown(self) -> str:
        lines = ["# Accuracy", "", f"Generated {self.generated_at.isoformat()}; states are counted live from the "
                 "database. Unscoreable = never bound at issue (published, never scored).", "",
                 "| measure | value |", "|---|---|"]
        lines += [f"| {k.strip()} | {v} |" for k, v in self.rows()]
        if self.metrics is not None:
            lines += ["", "Identity: Brier = REL − RES + UNC + (within-bin variance − covariance); the within-bin "
                      "terms vanish when each bin holds one forecast value.", "",
                      "| bin | n | mean forecast | observed frequency |", "|---|---|---|---|"]
            lines += [f"| [{b['lower']:.2f}, {b['upper']:.2f}] | {b['n']} | {b['mean_forecast']:.3f} | "
                      f"{b['observed_frequency']:.3f} |" for b in self.metrics.decomposition.bins]
        lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict:
        data = asdict(self)
        data["scoreable"] = self.scoreable
        return json.loads(json.dumps(data, default=str))

    def write(self, directory: Path) -> dict[str, Path]:
        """accuracy.md, accuracy.json and (once anything resolved) reliability.png in `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        paths = {"markdown": directory / "accuracy.md", "json": directory / "accuracy.json"}
        paths["markdown"].write_text(self.markdown(), encoding="utf-8")
        paths["json"].write_text(json.dumps(self.as_dict(), indent=2), encoding="utf-8")
        if self.metrics is not None:
            paths["reliability"] = directory / "reliability.png"
            paths["reliability"].write_bytes(reliability_png(self.metrics.decomposition))
        return paths


def _deadline_outcome_counts(resolved: pd.DataFrame) -> dict[str, int]:
    known = resolved["deadline_outcome"].notna()
    same = known & (resolved["deadline_outcome"] == resolved["outcome"]).fillna(False)
    return {"same": int(same.sum()), "revised since": int((known & ~same).sum()),
            "not known at the deadline": int((~known).sum())}


@dataclass(frozen=True)
class AccuracyRows:
    """What the Accuracy report of one scoring version is composed from, as the store reads it."""
    scoring_version: str
    counts: dict[str, int]              # live states (forum.forecast_states)
    current: pd.DataFrame               # the version's current scores (forum.current_scores)
    last_bound_at: datetime | None      # issue time of the newest bound forecast
    summaries: pd.DataFrame             # per version: version, measure, is_default, scored, resolved, mean_score


def accuracy_report(rows: AccuracyRows, *, fixed_base_rate: float = 0.5, now: datetime | None = None) -> AccuracyReport:
    """The Accuracy report of one scoring version (any registered one), with every version's summary beside."""
    rule = scoring_rule(rows.scoring_version)
    resolved = rows.current[rows.current["status"] == "resolved"]
    report = AccuracyReport(scoring_version=rows.scoring_version, generated_at=now or datetime.now(timezone.utc),
                            counts=rows.counts, last_bound_at=rows.last_bound_at, metrics=None,
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
                       for r in rows.summaries.itertuples()]
    return report
