"""Europe PMC REST search (`resultType=core` carries abstracts and the open-access licence)."""

from __future__ import annotations

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, normalise_doi
from forum_atlas.evidence.text import strip_markup

SPEC = SourceSpec("europepmc", "https://www.ebi.ac.uk/europepmc/webservices/rest", rate_per_s=10.0,
                  rate_doc="Europe PMC publishes no hard limit; 10 requests/s keeps within its fair-use guidance")
EPMC_LICENCE = "Europe PMC abstract (Europe PMC terms of use)"


def _pub_types(result: dict) -> list[str]:
    listed = (result.get("pubTypeList") or {}).get("pubType")
    if isinstance(listed, list):
        return [str(t).lower() for t in listed]
    return [t.strip() for t in str(result.get("pubType") or "").lower().split(";") if t.strip()]


def parse_search(source: str, payload: object) -> list[EvidenceItem]:
    expect(source, isinstance(payload, dict) and "hitCount" in payload, "search: no hitCount in the answer")
    results = (payload.get("resultList") or {}).get("result")
    expect(source, isinstance(results, list), "search: no resultList.result list")
    items = []
    for result in results:
        types = _pub_types(result)
        pmcid = result.get("pmcid")
        licence = result.get("license")
        items.append(EvidenceItem(
            source=source, external_id=f"{result.get('source', 'MED')}:{result.get('id')}",
            title=strip_markup(result.get("title") or ""), text=strip_markup(result.get("abstractText") or ""),
            doi=normalise_doi(result.get("doi")), pmid=result.get("pmid"),
            url=f"https://europepmc.org/article/{result.get('source', 'MED')}/{result.get('id')}",
            published=result.get("pubYear"), kind="abstract",
            licence=licence or (EPMC_LICENCE if result.get("abstractText") else None),
            retracted="retracted publication" in types,
            notes=[f"PMC {pmcid}, open access" if result.get("isOpenAccess") == "Y" else "not open access"]
            + (["retraction notice (not the retracted paper)"] if any("retraction" in t and "retracted" not in t
                                                                     for t in types) else [])))
    return items


class EuropePmcConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        _, payload = self.http.get_json("/search", {"query": query.text, "format": "json", "resultType": "core",
                                                     "pageSize": str(query.limit)})
        return parse_search(self.spec.name, payload)
