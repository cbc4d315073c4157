"""MedlinePlus Connect: health-topic summaries for a coded problem, medication or test
(`mainSearchCriteria.v.c` + code system; ICD-10-CM by default), as JSON. Curated, plain-language
recommendations (US Government works): a curated source for the licence guard."""

from __future__ import annotations

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery
from forum_atlas.evidence.text import strip_markup

SPEC = SourceSpec("medlineplus", "https://connect.medlineplus.gov", rate_per_s=1.5,
                  rate_doc="MedlinePlus Connect: at most 100 requests/minute per IP")
CODE_SYSTEMS = {"icd10cm": "2.16.840.1.113883.6.90", "icd9cm": "2.16.840.1.113883.6.103",
                "snomedct": "2.16.840.1.113883.6.96", "rxcui": "2.16.840.1.113883.6.88",
                "loinc": "2.16.840.1.113883.6.1"}
MEDLINEPLUS_LICENCE = "MedlinePlus health topic summary (NLM, US Government work)"


def _value(node: object) -> str:
    return str(node.get("_value", "")) if isinstance(node, dict) else ""


def parse_feed(source: str, payload: object) -> list[EvidenceItem]:
    feed = payload.get("feed") if isinstance(payload, dict) else None
    expect(source, isinstance(feed, dict), "Connect: no feed object")
    items = []
    for entry in feed.get("entry") or []:
        links = [link.get("href") for link in entry.get("link") or [] if isinstance(link, dict)]
        url = links[0] if links else None
        items.append(EvidenceItem(source=source, external_id=url or _value(entry.get("id")),
                                  title=_value(entry.get("title")), text=strip_markup(_value(entry.get("summary"))),
                                  url=url, published=_value(entry.get("updated"))[:4] or None,
                                  kind="recommendation", licence=MEDLINEPLUS_LICENCE))
    return items


class MedlinePlusConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        """Connect answers codes, not free text: `filters={"code": "E11.9", "code_system": "icd10cm"}`;
        the question goes along as the display name."""
        code = query.filters.get("code")
        if not code:
            return []
        system = CODE_SYSTEMS[query.filters.get("code_system", "icd10cm")]
        _, payload = self.http.get_json("/service", {"mainSearchCriteria.v.c": code, "mainSearchCriteria.v.cs": system,
                                                      "mainSearchCriteria.v.dn": query.text,
                                                      "knowledgeResponseType": "application/json"})
        return parse_feed(self.spec.name, payload)[:query.limit]
