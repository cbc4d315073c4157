"""openFDA drug endpoints: label (`/drug/label.json`), Drugs@FDA (`/drug/drugsfda.json`) and adverse
events (`/drug/event.json`); `filters={"endpoint": …}` picks one (label by default).

openFDA answers a search with zero hits with HTTP 404 `{"error": {"code": "NOT_FOUND", "message":
"No matches found!"}}` — that is `empty`. Other errors keep their status mapping: 400 BAD_REQUEST is
`bad_response`, 403 API_KEY_INVALID `auth`, 429 `rate_limited`, 500 SERVER_ERROR `unavailable`.
"""

from __future__ import annotations

from forum_atlas.evidence.connectors.base import SourceSpec, expect
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery
from forum_atlas.providers import ProviderBadResponse

SPEC = SourceSpec("openfda", "https://api.fda.gov", rate_per_s=4.0,
                  rate_doc="openFDA without a key: 240 requests/minute and 1,000/day per IP")
ENDPOINTS = {"label": "/drug/label.json", "drugsfda": "/drug/drugsfda.json", "event": "/drug/event.json"}
LABEL_SECTIONS = ("indications_and_usage", "dosage_and_administration", "contraindications", "warnings",
                  "boxed_warning", "adverse_reactions", "drug_interactions")


def _first(value: object) -> str:
    return str(value[0]) if isinstance(value, list) and value else str(value or "")


def _label(source: str, result: dict, licence: str) -> EvidenceItem:
    names = result.get("openfda") or {}
    title = " / ".join(filter(None, (_first(names.get("brand_name")), _first(names.get("generic_name"))))) \
        or result.get("set_id", "")
    text = "\n\n".join(" ".join(result[s]) for s in LABEL_SECTIONS if isinstance(result.get(s), list))
    return EvidenceItem(source=source, external_id=f"label:{result.get('set_id') or result.get('id')}",
                        title=f"Drug label: {title}", text=text,
                        published=str(result.get("effective_time", ""))[:4] or None,
                        url=f"https://dailymed.nlm.nih.gov/dailymed/lookup.cfm?setid={result.get('set_id')}",
                        kind="label", licence=licence)


def _application(source: str, result: dict, licence: str) -> EvidenceItem:
    products = result.get("products") or []
    brands = sorted({p.get("brand_name", "") for p in products} - {""})
    submissions = result.get("submissions") or []
    text = "; ".join(f"{s.get('submission_type')} {s.get('submission_number')} {s.get('submission_status')} "
                     f"{s.get('submission_status_date')}" for s in submissions)
    return EvidenceItem(source=source, external_id=f"drugsfda:{result.get('application_number')}",
                        title=f"Drugs@FDA {result.get('application_number')}: {', '.join(brands)} "
                              f"({result.get('sponsor_name')})", text=text, kind="metadata", licence=licence)


def _event(source: str, result: dict, licence: str) -> EvidenceItem:
    patient = result.get("patient") or {}
    reactions = [r.get("reactionmeddrapt") for r in patient.get("reaction") or [] if r.get("reactionmeddrapt")]
    drugs = [d.get("medicinalproduct") for d in patient.get("drug") or [] if d.get("medicinalproduct")]
    return EvidenceItem(source=source, external_id=f"event:{result.get('safetyreportid')}",
                        title=f"FAERS report {result.get('safetyreportid')}",
                        text=f"Drugs: {', '.join(drugs)}. Reactions: {', '.join(reactions)}. "
                             f"Serious: {result.get('serious')}.",
                        published=str(result.get("receivedate", ""))[:4] or None, kind="adverse_events",
                        licence=licence)


PARSERS = {"label": _label, "drugsfda": _application, "event": _event}


def parse_results(source: str, endpoint: str, payload: object) -> list[EvidenceItem]:
    expect(source, isinstance(payload, dict) and isinstance(payload.get("results"), list), "no results list")
    licence = f"openFDA ({(payload.get('meta') or {}).get('license', 'https://open.fda.gov/license/')})"
    return [PARSERS[endpoint](source, result, licence) for result in payload["results"]]


class OpenFdaConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        endpoint = query.filters.get("endpoint", "label")
        status, payload = self.http.get_json(ENDPOINTS[endpoint], {"search": query.text, "limit": str(query.limit)},
                                             accept=(404,))
        if status == 404:
            error = payload.get("error") if isinstance(payload, dict) else None
            if isinstance(error, dict) and error.get("code") == "NOT_FOUND":
                return []   # openFDA's way of saying "zero hits"
            raise ProviderBadResponse(self.spec.name, f"HTTP 404 without NOT_FOUND: {str(payload)[:200]}", status=404)
        return parse_results(self.spec.name, endpoint, payload)
