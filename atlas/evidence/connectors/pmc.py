"""PMC Open Access: esearch db=pmc for ids, the OA web service (`oa.fcgi`) for each id's licence, and
efetch db=pmc for the JATS full text of the openly licensed ones.

- `<error code="idIsNotOpenAccess">`: the article is not in the OA subset. Asked for one id
  (`filters={"pmcid": …}`) that is `licence_blocked`; in a search the id is left out with a note.
- An OA record whose `license` is "none" (e.g. author manuscripts, publisher-restricted deposits) is
  kept as a metadata item with no open licence: the licence guard stores it as context only.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from forum_atlas.evidence.connectors.base import SourceSpec, expect, parse_records, parse_root, text_of
from forum_atlas.evidence.connectors.http import LicenceBlocked, SourceHttp
from forum_atlas.evidence.connectors.pubmed import parse_esearch
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, normalise_doi
from forum_atlas.providers import ProviderBadResponse

SPEC = SourceSpec("pmc", "https://eutils.ncbi.nlm.nih.gov/entrez/eutils", rate_per_s=3.0,
                  rate_doc="NCBI: 3 requests/s without an API key, shared by E-utilities and the OA service")
OA_BASE_URL = "https://www.ncbi.nlm.nih.gov/pmc/utils/oa"


@dataclass(frozen=True)
class OaRecord:
    pmcid: str
    licence: str | None     # None: not in the OA subset
    citation: str = ""
    retracted: bool = False
    error: str = ""


def parse_oa(source: str, pmcid: str, text: str) -> OaRecord:
    root = parse_root(source, text, "oa.fcgi", "OA")
    error = root.find("error")
    if error is not None:
        code = error.get("code", "")
        if code == "idIsNotOpenAccess":
            return OaRecord(pmcid, None, error=f"{code}: {text_of(error)}")
        raise ProviderBadResponse(source, f"oa.fcgi error {code}: {text_of(error)}")
    record = root.find("records/record")
    expect(source, record is not None, "oa.fcgi: no record and no error")
    expect(source, record.get("id") == pmcid, f"oa.fcgi: asked for {pmcid}, answered {record.get('id')}")
    licence = record.get("license")
    return OaRecord(pmcid, None if licence in (None, "", "none") else licence, record.get("citation", ""),
                    record.get("retracted") == "yes")


def _jats_section(article: ET.Element, path: str) -> str:
    return "\n".join(text_of(p) for p in article.iterfind(path) if text_of(p))


def _jats_article(source: str, article: ET.Element) -> EvidenceItem:
    meta = article.find("front/article-meta")
    expect(source, meta is not None, "article without front/article-meta")
    ids = {node.get("pub-id-type"): text_of(node) for node in meta.iterfind("article-id")}
    pmcid = ids.get("pmc") or ids.get("pmcid") or ""
    pmcid = pmcid if pmcid.startswith("PMC") else f"PMC{pmcid}"
    related = [r.get("related-article-type") for r in article.iter("related-article")]
    abstract = _jats_section(meta, "abstract//p")
    body = _jats_section(article, "body//p")
    return EvidenceItem(
        source=source, external_id=pmcid, title=text_of(meta.find("title-group/article-title")),
        text="\n\n".join(t for t in (abstract, body) if t), doi=normalise_doi(ids.get("doi")),
        pmid=ids.get("pmid"), url=f"https://pmc.ncbi.nlm.nih.gov/articles/{pmcid}/",
        published=text_of(meta.find("pub-date/year")) or None, kind="full_text",
        licence=text_of(meta.find("permissions/license")) or None,
        notes=[f"article-type {article.get('article-type')}"] + [f"related-article {r}" for r in related if r])


def parse_jats(source: str, text: str) -> list[EvidenceItem]:
    return parse_records(source, text, "efetch db=pmc", "pmc-articleset", "article", _jats_article)


class PmcConnector:
    def __init__(self, http: SourceHttp, oa_http: SourceHttp, spec: SourceSpec = SPEC):
        self.spec, self.http, self.oa_http = spec, http, oa_http

    def open_access(self, pmcid: str) -> OaRecord:
        return parse_oa(self.spec.name, pmcid, self.oa_http.get("/oa.fcgi", {"id": pmcid}).text)

    def fetch(self, pmcids: list[str]) -> list[EvidenceItem]:
        ids = ",".join(p.removeprefix("PMC") for p in pmcids)
        answer = self.http.get("/efetch.fcgi", {"db": "pmc", "id": ids, "retmode": "xml"})
        return parse_jats(self.spec.name, answer.text)

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        asked = query.filters.get("pmcid")
        if asked:
            pmcids = [asked]
        else:
            found = parse_esearch(self.spec.name, self.http.get(
                "/esearch.fcgi", {"db": "pmc", "term": query.text, "retmax": str(query.limit), "retmode": "xml"}).text)
            pmcids = [f"PMC{i}" for i in found]
        records = [self.open_access(p) for p in pmcids]
        blocked = [r for r in records if r.error]
        if asked and blocked:
            raise LicenceBlocked(self.spec.name, f"{asked}: {blocked[0].error}")
        licensed = [r for r in records if r.licence]
        items = self.fetch([r.pmcid for r in licensed]) if licensed else []
        by_id = {r.pmcid: r for r in licensed}
        for item in items:
            record = by_id.get(item.external_id)
            if record:
                item.licence = record.licence
                item.retracted = item.retracted or record.retracted
        # In the OA service but without an open licence: citation only, kept as context.
        items += [EvidenceItem(source=self.spec.name, external_id=r.pmcid, title=r.citation, text=r.citation,
                               url=f"https://pmc.ncbi.nlm.nih.gov/articles/{r.pmcid}/", kind="metadata",
                               licence=None, retracted=r.retracted, notes=["PMC OA record with licence 'none'"])
                  for r in records if not r.licence and not r.error]
        return items
