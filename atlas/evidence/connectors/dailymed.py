"""DailyMed (NLM) web services v2: `spls.json?drug_name=` lists labels (SPL set ids), then
`spls/{setid}.xml` gives each label's SPL document, whose sections become the record text.
FDA-submitted labels distributed by NLM: a curated source for the licence guard."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from forum_atlas.evidence.connectors.base import SourceSpec, expect, parse_xml, text_of
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery

SPEC = SourceSpec("dailymed", "https://dailymed.nlm.nih.gov/dailymed/services/v2", rate_per_s=5.0,
                  rate_doc="DailyMed documents no limit; 5 requests/s, as for other NLM services")
DAILYMED_LICENCE = "DailyMed SPL (FDA label text distributed by NLM)"
_HL7 = "{urn:hl7-org:v3}"


def parse_spls(source: str, payload: object) -> list[dict]:
    expect(source, isinstance(payload, dict) and isinstance(payload.get("data"), list), "spls.json: no data list")
    return [entry for entry in payload["data"] if isinstance(entry, dict) and entry.get("setid")]


def _attribute(root: ET.Element, tag: str, name: str) -> str:
    node = root.find(f"{_HL7}{tag}")
    return node.get(name, "") if node is not None else ""


def parse_spl(source: str, setid: str, text: str) -> EvidenceItem:
    root = parse_xml(source, text, f"spls/{setid}.xml")
    expect(source, root.tag == f"{_HL7}document", f"spls/{setid}.xml: unexpected root <{root.tag}>")
    sections = []
    for section in root.iter(f"{_HL7}section"):
        title = text_of(section.find(f"{_HL7}title"))
        body = text_of(section.find(f"{_HL7}text"))
        if body:
            sections.append(f"{title}: {body}" if title else body)
    effective, version = (_attribute(root, tag, "value") for tag in ("effectiveTime", "versionNumber"))
    return EvidenceItem(source=source, external_id=f"setid:{setid}", title=text_of(root.find(f"{_HL7}title")),
                        text="\n\n".join(sections), published=effective[:4] or None, kind="label",
                        url=f"https://dailymed.nlm.nih.gov/dailymed/lookup.cfm?setid={setid}",
                        licence=DAILYMED_LICENCE, notes=[f"SPL version {version or '?'}"])


class DailyMedConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http = spec, http

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        setid = query.filters.get("setid")
        if setid:
            setids = [setid]
        else:
            _, payload = self.http.get_json("/spls.json", {"drug_name": query.text, "pagesize": str(query.limit)})
            setids = [entry["setid"] for entry in parse_spls(self.spec.name, payload)][:query.limit]
        return [parse_spl(self.spec.name, s, self.http.get(f"/spls/{s}.xml").text) for s in setids]
