"""Retraction gate (EVB-2), fail closed: a record is excluded from retrieval when

- its source marks it retracted or withdrawn (PubMed "Retracted Publication", OpenAlex
  `is_retracted`, a PMC OA record `retracted="yes"`, ClinicalTrials.gov `WITHDRAWN`);
- the Retraction Watch data lists its DOI or PMID with nature Retraction;
- Crossref's `updated-by` for its DOI holds a retraction, withdrawal or removal;
- its DOI could not be checked with Crossref (timeout, error): unknown status is not "clean".

An expression of concern or a correction does not exclude; it is noted. Each exclusion keeps its
reason, so a brief that would cite the record can say why it may not.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from forum_atlas.evidence.connectors.crossref import EXCLUDING_UPDATES, FLAGGING_UPDATES, updates_of
from forum_atlas.evidence.model import EvidenceItem, normalise_doi
from forum_atlas.providers import ProviderError


@dataclass(frozen=True)
class RetractionWatchEntry:
    record_id: str
    nature: str          # Retraction | Expression of concern | Correction | Reinstatement
    notice_doi: str | None
    date: str


@dataclass
class RetractionWatchIndex:
    by_doi: dict[str, RetractionWatchEntry] = field(default_factory=dict)
    by_pmid: dict[str, RetractionWatchEntry] = field(default_factory=dict)

    @classmethod
    def from_csv(cls, text: str) -> RetractionWatchIndex:
        """The Crossref-Labs Retraction Watch CSV (columns OriginalPaperDOI, OriginalPaperPubMedID, …)."""
        index = cls()
        for row in csv.DictReader(io.StringIO(text)):
            entry = RetractionWatchEntry(row["Record ID"], row["RetractionNature"],
                                         normalise_doi(row.get("RetractionDOI")), row.get("RetractionDate", ""))
            doi = normalise_doi(row.get("OriginalPaperDOI"))
            if doi and doi != "unavailable":
                index.by_doi[doi] = entry
            pmid = (row.get("OriginalPaperPubMedID") or "").split(".")[0]
            if pmid and pmid != "0":
                index.by_pmid[pmid] = entry
        return index

    def lookup(self, item: EvidenceItem) -> RetractionWatchEntry | None:
        return self.by_doi.get(item.doi or "") or self.by_pmid.get(item.pmid or "")


_EXCLUDING_NOTE = re.compile(r"(?i)retract|withdra|removal")
CrossrefLookup = Callable[[str], dict | None]   # DOI -> Crossref message, None when Crossref has no record


@dataclass
class GateResult:
    admitted: list[EvidenceItem]
    excluded: list[EvidenceItem]

    def exclusions(self) -> dict[str, str]:
        """Why each excluded record may not be cited, by DOI / PMID / source id."""
        return {item.dedup_key: item.excluded_reason for item in self.excluded}


def _crossref_reason(item: EvidenceItem, lookup: CrossrefLookup, checked: dict[str, object]) -> str:
    doi = item.doi or ""
    if doi not in checked:
        try:
            checked[doi] = lookup(doi)
        except ProviderError as exc:
            checked[doi] = exc
    answer = checked[doi]
    if isinstance(answer, ProviderError):
        return f"retraction status unknown (Crossref {answer.kind}: {answer.detail[:120]}); excluded until checked"
    if answer is None:
        item.notes.append("Crossref has no record of this DOI; checked against Retraction Watch data only")
        return ""
    for update in updates_of(answer):
        if update.type in EXCLUDING_UPDATES:
            return f"Crossref: {update.type} ({update.source}, {update.date}, notice {update.notice_doi})"
        if update.type in FLAGGING_UPDATES:
            item.notes.append(f"Crossref: {update.type} ({update.date}, notice {update.notice_doi})")
    return ""


def gate(items: list[EvidenceItem], *, crossref: CrossrefLookup | None,
         retraction_watch: RetractionWatchIndex | None) -> GateResult:
    admitted, excluded, checked = [], [], {}
    for item in items:
        reason = ""
        if item.retracted:
            # The notes that say why first (a record may also carry corrections): they name the notice.
            said = [n for n in item.notes if _EXCLUDING_NOTE.search(n)] or item.notes
            reason = f"{item.source} marks it retracted/withdrawn ({'; '.join(said)[:240]})"
        entry = retraction_watch.lookup(item) if retraction_watch and not reason else None
        if entry and entry.nature.lower() == "retraction":
            reason = f"Retraction Watch record {entry.record_id}: retracted {entry.date} (notice {entry.notice_doi})"
        elif entry:
            item.notes.append(f"Retraction Watch record {entry.record_id}: {entry.nature}")
        if not reason and item.doi:
            reason = (_crossref_reason(item, crossref, checked) if crossref is not None
                      else "retraction status unknown (no Crossref check configured); excluded until checked")
        if not reason and not item.doi:
            item.notes.append("no DOI: retraction status from the source's flags and Retraction Watch only")
        item.excluded_reason = reason
        (excluded if reason else admitted).append(item)
    return GateResult(admitted, excluded)
