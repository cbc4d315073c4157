"""PubMed through NCBI E-utilities: esearch for ids, then efetch for the records (abstracts).

A zero-hit esearch that carries an `ErrorList` (e.g. `PhraseNotFound`) is the API saying the query
did not run as asked: that is a `bad_response`, not an empty success. Cochrane reviews are the same
connector with a journal filter (`filters={"journal": "cochrane"}`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from forum_atlas.evidence.connectors.base import SourceSpec, expect, parse_records, parse_xml, text_of
from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, normalise_doi
from forum_atlas.providers import ProviderBadResponse

SPEC = SourceSpec("pubmed", "https://eutils.ncbi.nlm.nih.gov/entrez/eutils", rate_per_s=3.0,
                  rate_doc="NCBI E-utilities: 3 requests/s without an API key (10/s with one)")
COCHRANE_SPEC = SourceSpec("cochrane", SPEC.base_url, rate_per_s=SPEC.rate_per_s, rate_doc=SPEC.rate_doc)
COCHRANE_JOURNAL = '"Cochrane Database Syst Rev"[Journal]'
PUBMED_LICENCE = "PubMed abstract (NLM terms of use)"


def parse_esearch(source: str, text: str) -> list[str]:
    root = parse_xml(source, text, "esearch")
    error = root if root.tag == "ERROR" else root.find("ERROR")
    if error is not None:
        raise ProviderBadResponse(source, f"esearch ERROR: {text_of(error)}")
    expect(source, root.tag == "eSearchResult", f"esearch: unexpected root <{root.tag}>")
    errors = root.find("ErrorList")
    if errors is not None and len(errors):
        said = "; ".join(f"{e.tag}: {text_of(e)}" for e in errors)
        raise ProviderBadResponse(source, f"esearch ErrorList ({said}); Count={text_of(root.find('Count'))}")
    return [text_of(e) for e in root.iterfind("IdList/Id")]


def _abstract(article: ET.Element) -> str:
    parts = []
    for node in article.iterfind("Abstract/AbstractText"):
        label = node.get("Label")
        body = text_of(node)
        parts.append(f"{label}: {body}" if label else body)
    return "\n".join(p for p in parts if p)


def _published(article: ET.Element) -> str | None:
    date = article.find("Journal/JournalIssue/PubDate")
    if date is None:
        return None
    return text_of(date.find("Year")) or text_of(date.find("MedlineDate"))[:4] or None


def _pubmed_article(source: str, record: ET.Element) -> EvidenceItem:
    citation = record.find("MedlineCitation")
    article = citation.find("Article") if citation is not None else None
    pmid = text_of(citation.find("PMID")) if citation is not None else ""
    expect(source, article is not None and bool(pmid), "efetch: PubmedArticle without PMID/Article")
    doi = None
    for node in record.iterfind("PubmedData/ArticleIdList/ArticleId"):
        if node.get("IdType") == "doi":
            doi = text_of(node)
    for node in article.iterfind("ELocationID"):
        if node.get("EIdType") == "doi" and not doi:
            doi = text_of(node)
    types = [text_of(t) for t in article.iterfind("PublicationTypeList/PublicationType")]
    refs = {c.get("RefType") for c in citation.iterfind("CommentsCorrectionsList/CommentsCorrections")}
    retracted = "Retracted Publication" in types or "RetractionIn" in refs
    notes = [f"publication types: {', '.join(types)}"] if types else []
    return EvidenceItem(
        source=source, external_id=f"pmid:{pmid}", title=text_of(article.find("ArticleTitle")),
        text=_abstract(article), doi=normalise_doi(doi), pmid=pmid,
        url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/", published=_published(article),
        kind="abstract", licence=PUBMED_LICENCE, retracted=retracted, notes=notes)


def parse_efetch(source: str, text: str) -> list[EvidenceItem]:
    return parse_records(source, text, "efetch", "PubmedArticleSet", "PubmedArticle", _pubmed_article)


class PubMedConnector:
    def __init__(self, http: SourceHttp, spec: SourceSpec = SPEC, *, journal_filter: str | None = None):
        self.spec, self.http, self.journal_filter = spec, http, journal_filter

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        term = query.text if not self.journal_filter else f"({query.text}) AND {self.journal_filter}"
        ids = parse_esearch(self.spec.name, self.http.get(
            "/esearch.fcgi", {"db": "pubmed", "term": term, "retmax": str(query.limit), "retmode": "xml"}).text)
        if not ids:
            return []
        return parse_efetch(self.spec.name, self.http.get(
            "/efetch.fcgi", {"db": "pubmed", "id": ",".join(ids), "retmode": "xml", "rettype": "abstract"}).text)


def cochrane(http: SourceHttp) -> PubMedConnector:
    return PubMedConnector(http, COCHRANE_SPEC, journal_filter=COCHRANE_JOURNAL)
