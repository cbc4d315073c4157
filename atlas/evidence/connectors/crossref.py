"""Crossref works: literature metadata, and the retraction gate's source (`updated-by` entries of type
retraction / withdrawal / removal / expression_of_concern, which Crossref also fills from Retraction
Watch data).

A DOI Crossref does not know is a 404 "Resource not found." (plain text): `empty` for a DOI lookup.
Other 4xx bodies (`validation-failure`, `resource-failure`) are `bad_response`; 5xx `unavailable`.
"""

from __future__ import annotations

from dataclasses import dataclass

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, normalise_doi
from forum_atlas.evidence.text import strip_markup
from forum_atlas.providers import ProviderBadResponse

SPEC = SourceSpec("crossref", "https://api.crossref.org", rate_per_s=5.0,
                  rate_doc="Crossref REST API public pool: 5 requests/s, 1 concurrent (polite pool: 10/s)")
EXCLUDING_UPDATES = frozenset({"retraction", "withdrawal", "removal", "partial_retraction"})
FLAGGING_UPDATES = frozenset({"expression_of_concern"})


@dataclass(frozen=True)
class Update:
    type: str
    notice_doi: str | None
    source: str
    date: str | None


def updates_of(message: dict) -> list[Update]:
    out = []
    for entry in message.get("updated-by") or []:
        parts = ((entry.get("updated") or {}).get("date-parts") or [[None]])[0]
        out.append(Update(type=str(entry.get("type", "")).lower().replace("-", "_"),
                          notice_doi=normalise_doi(entry.get("DOI")), source=str(entry.get("source", "publisher")),
                          date="-".join(f"{p:02d}" if i else str(p) for i, p in enumerate(parts) if p) or None))
    return out


def parse_work(source: str, message: object) -> EvidenceItem:
    expect(source, isinstance(message, dict) and bool(message.get("DOI")), "work without a DOI")
    title = (message.get("title") or [""])[0]
    issued = ((message.get("issued") or message.get("created") or {}).get("date-parts") or [[None]])[0]
    licences = [entry.get("URL") for entry in message.get("license") or [] if entry.get("URL")]
    updates = updates_of(message)
    excluding = [u for u in updates if u.type in EXCLUDING_UPDATES]
    doi = normalise_doi(message["DOI"])
    return EvidenceItem(
        source=source, external_id=f"doi:{doi}", title=strip_markup(title),
        text=strip_markup(message.get("abstract") or ""), doi=doi, url=f"https://doi.org/{doi}",
        published=str(issued[0]) if issued and issued[0] else None,
        kind="abstract" if message.get("abstract") else "metadata",
        licence=licences[0] if licences else None, retracted=bool(excluding),
        notes=[f"updated-by {u.type} ({u.source}, {u.date}, notice {u.notice_doi})" for u in updates])


class CrossrefConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def work(self, doi: str) -> dict | None:
        """The Crossref message for one DOI, or None when Crossref does not know it."""
        response = self.http.get(f"/works/{doi}", accept=(404,))
        if response.status_code == 404:
            if response.headers.get("content-type", "").startswith("text/plain"):
                return None
            payload = self.http.decode_json(response, "/works/{doi}")
            raise_crossref_failure(self.spec.name, 404, payload)
        payload = self.http.decode_json(response, "/works/{doi}")
        expect(self.spec.name, isinstance(payload, dict) and isinstance(payload.get("message"), dict),
               "/works/{doi}: no message object")
        return payload["message"]

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        doi = query.filters.get("doi")
        if doi:
            message = self.work(doi)
            return [] if message is None else [parse_work(self.spec.name, message)]
        _, payload = self.http.get_json("/works", {"query": query.text, "rows": str(query.limit)})
        items = (payload.get("message") or {}).get("items") if isinstance(payload, dict) else None
        expect(self.spec.name, isinstance(items, list), "/works: no message.items list")
        return [parse_work(self.spec.name, item) for item in payload["message"]["items"]]


def raise_crossref_failure(source: str, status: int, payload: object) -> None:
    said = payload.get("message") if isinstance(payload, dict) else payload
    raise ProviderBadResponse(source, f"HTTP {status}: {str(said)[:300]}", status=status)
