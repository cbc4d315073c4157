"""ClinicalTrials.gov API v2: `/studies?query.term=` and `/studies/{nctId}`.

A study whose `overallStatus` is WITHDRAWN never enrolled: the item is marked withdrawn and the
retraction gate excludes it.
"""

from __future__ import annotations

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery

SPEC = SourceSpec("clinicaltrials", "https://clinicaltrials.gov/api/v2", rate_per_s=0.8,
                  rate_doc="ClinicalTrials.gov API: about 50 requests/minute per IP")
CTGOV_LICENCE = "ClinicalTrials.gov record (US Government work, public domain)"
EXCLUDED_STATUSES = frozenset({"WITHDRAWN"})


def parse_study(source: str, study: object) -> EvidenceItem:
    protocol = study.get("protocolSection") if isinstance(study, dict) else None
    expect(source, isinstance(protocol, dict), "study without protocolSection")
    ident = protocol.get("identificationModule") or {}
    status = protocol.get("statusModule") or {}
    description = protocol.get("descriptionModule") or {}
    nct = ident.get("nctId")
    expect(source, bool(nct), "study without nctId")
    overall = str(status.get("overallStatus") or "")
    start = (status.get("startDateStruct") or {}).get("date")
    text = "\n\n".join(t for t in (description.get("briefSummary"), description.get("detailedDescription")) if t)
    notes = [f"overallStatus {overall}"]
    if status.get("whyStopped"):
        notes.append(f"whyStopped: {status['whyStopped']}")
    return EvidenceItem(
        source=source, external_id=nct, title=ident.get("officialTitle") or ident.get("briefTitle") or nct,
        text=text, url=f"https://clinicaltrials.gov/study/{nct}", published=start[:4] if start else None,
        kind="trial", licence=CTGOV_LICENCE, retracted=overall in EXCLUDED_STATUSES, notes=notes)


class ClinicalTrialsConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        nct = query.filters.get("nct_id")
        if nct:
            status, payload = self.http.get_json(f"/studies/{nct}", accept=(404,))
            return [] if status == 404 else [parse_study(self.spec.name, payload)]
        _, payload = self.http.get_json("/studies", {"query.term": query.text, "pageSize": str(query.limit),
                                                      "format": "json"})
        expect(self.spec.name, isinstance(payload, dict) and isinstance(payload.get("studies"), list),
               "/studies: no studies list")
        return [parse_study(self.spec.name, study) for study in payload["studies"]]
