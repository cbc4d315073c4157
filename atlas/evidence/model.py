"""What the evidence router works with: a query, the items a source returned, and the typed outcome
of asking that source (a failing or empty source is never an empty success)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

OutcomeKind = Literal["ok", "empty", "timeout", "rate_limited", "auth", "unavailable", "bad_response",
                      "licence_blocked"]


@dataclass(frozen=True)
class EvidenceQuery:
    """One source's share of a query plan; `text` is already de-identified when a connector sees it."""

    text: str
    limit: int = 10
    filters: dict[str, str] = field(default_factory=dict)


@dataclass
class EvidenceItem:
    source: str
    external_id: str          # the source's own id ('pmid:123', 'NCT00973089', an openFDA set id …)
    title: str
    text: str
    doi: str | None = None    # lower-case, without the https://doi.org/ prefix
    pmid: str | None = None
    url: str | None = None
    published: str | None = None
    kind: str = "abstract"    # abstract | full_text | recommendation | label | trial | adverse_events | metadata
    licence: str | None = None  # the licence the source states for this item, if any
    retracted: bool = False   # the source itself marks it retracted / withdrawn
    notes: list[str] = field(default_factory=list)
    source_rank: int = 0      # position in its source's own answer (0 = the source's best)
    # filled by the licence guard and the retraction gate
    may_support: bool = False
    licence_reason: str = ""
    excluded_reason: str = ""

    @property
    def dedup_key(self) -> str:
        if self.doi:
            return f"doi:{self.doi}"
        if self.pmid:
            return f"pmid:{self.pmid}"
        return f"{self.source}:{self.external_id}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceItem:
        return cls(**data)


@dataclass
class SourceOutcome:
    source: str
    kind: OutcomeKind
    n: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    detail: str = ""
    from_cache: bool = False

    @property
    def label(self) -> str:
        return f"ok({self.n})" if self.kind == "ok" else self.kind

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceOutcome:
        return cls(**{k: v for k, v in data.items() if k != "label"})


def normalise_doi(value: str | None) -> str | None:
    if not value:
        return None
    doi = value.strip().lower()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
        doi = doi.removeprefix(prefix)
    return doi or None
