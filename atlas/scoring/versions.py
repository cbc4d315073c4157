"""The scoring versions: each is data (what it measures, how it picks vintages, its constants) plus one
registered function from (probability, outcome) arrays to per-forecast scores. This module is the one place
in code that names them; `sql/110_scoring_versions.sql` holds the same data as rows of
`forum.scoring_versions` (a test keeps the two equal), so the database checks every score row against its
version and the state view reads the default version from there, not from a name written into it.

- brier-v1: (p − o)² on the newest vintage fetched by the scoring instant (what every score before issue 24
  is; unchanged).
- log-v1: the logarithmic score −ln(p) when the event happened, −ln(1 − p) when it did not, p clipped to
  [LOG_CLIP, 1 − LOG_CLIP] (`rules.py`, where both formulas are written). Same vintage as brier-v1.
- brier-v2: brier-v1's score on the vintage current at scoring time, stored beside the vintage that was
  current at the forecast's deadline (the newest full one fetched by then) and the outcome that vintage
  gave, so a revision between the deadline and scoring shows as two different outcomes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from forum_atlas.scoring.rules import LOG_CLIP, brier, log_score

Measure = Literal["brier", "log"]
# the forecast_scores column each measure's value is stored in
SCORE_COLUMN: dict[str, str] = {"brier": "brier", "log": "log_score"}


@dataclass(frozen=True)
class ScoringRule:
    version: str
    measure: Measure
    clip: float | None            # probabilities are clipped to [clip, 1 − clip] before scoring
    records_deadline_vintage: bool
    description: str
    score: Callable[[np.ndarray, np.ndarray], np.ndarray]

    @property
    def column(self) -> str:
        return SCORE_COLUMN[self.measure]

    def data_row(self) -> dict:
        """The version as the database stores it (forum.scoring_versions), without the function."""
        return {"version": self.version, "measure": self.measure, "clip": self.clip,
                "records_deadline_vintage": self.records_deadline_vintage, "description": self.description}


SCORING_RULES: dict[str, ScoringRule] = {rule.version: rule for rule in (
    ScoringRule("brier-v1", "brier", None, False,
                "Brier score (p - o)^2 on the newest vintage fetched by the scoring instant", brier),
    ScoringRule("log-v1", "log", LOG_CLIP, False,
                "logarithmic score -ln(p) if YES, -ln(1 - p) if NO (nats), p clipped to [0.001, 0.999]; "
                "newest vintage fetched by the scoring instant", log_score),
    ScoringRule("brier-v2", "brier", None, True,
                "Brier score on the vintage current at scoring time, beside the vintage current at the deadline "
                "and its outcome (revisions visible)", brier),
)}
# a field of a run form: the UI offers the registered versions as choices
VersionName = Literal[tuple(SCORING_RULES)]  # type: ignore[valid-type]
# The version the states and Accuracy show unless asked for another (forum.scoring_versions.is_default); the
# nightly writes it and every version that has score rows.
DEFAULT_VERSION = "brier-v1"


class UnknownScoringVersion(ValueError):
    pass


def scoring_rule(version: str) -> ScoringRule:
    try:
        return SCORING_RULES[version]
    except KeyError:
        raise UnknownScoringVersion(f"unknown scoring version {version!r}; registered: "
                                    f"{', '.join(SCORING_RULES)}") from None
