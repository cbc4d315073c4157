"""OpenAlex works: `/works?search=` for a query, `/works/doi:…` for one DOI.

A DOI that OpenAlex does not hold is answered with a 404 HTML page (not JSON): for a DOI lookup that
is `empty`; on the search endpoint a 404 means the request itself was wrong (`bad_response`).
"""

from __future__ import annotations

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, normalise_doi
from forum_atlas.evidence.text import from_inverted_index

SPEC = SourceSpec("openalex", "https://api.openalex.org", rate_per_s=10.0,
                  rate_doc="OpenAlex: max 10 requests/s and 100,000/day per user")


def parse_work(source: str, work: object) -> EvidenceItem:
    expect(source, isinstance(work, dict) and bool(work.get("id")), "work without an id")
    location = work.get("best_oa_location") or work.get("primary_location") or {}
    pmid = str((work.get("ids") or {}).get("pmid") or "").rstrip("/").rsplit("/", 1)[-1] or None
    return EvidenceItem(
        source=source, external_id=str(work["id"]).rsplit("/", 1)[-1],
        title=work.get("display_name") or work.get("title") or "",
        text=from_inverted_index(work.get("abstract_inverted_index")),
        doi=normalise_doi(work.get("doi")), pmid=pmid, url=work.get("doi") or work["id"],
        published=str(work.get("publication_year") or "") or None, kind="abstract",
        licence=location.get("license") if isinstance(location, dict) else None,
        retracted=bool(work.get("is_retracted")))


class OpenAlexConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        doi = query.filters.get("doi")
        if doi:
            response = self.http.get(f"/works/doi:{doi}", accept=(404,))
            if response.status_code == 404:   # OpenAlex's HTML "Not Found" page: it has no such work
                return []
            return [parse_work(self.spec.name, self.http.decode_json(response, "/works/doi"))]
        _, payload = self.http.get_json("/works", {"search": query.text, "per-page": str(query.limit)})
        expect(self.spec.name, isinstance(payload, dict) and isinstance(payload.get("results"), list),
               "works: no results list")
        return [parse_work(self.spec.name, work) for work in payload["results"]]
