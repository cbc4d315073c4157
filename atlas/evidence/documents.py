"""A gather result as the existing ingestion path takes it (JSONL rows: versioned and validated
there) and as the run's record of what became of each record.

Only records that may support a claim (licence guard) and passed the retraction gate become
documents; context-only records are kept as run records with the licence reason, excluded ones
with the retraction reason, and with their text, so that a later brief whose retrieval would have
matched one can say why it is absent. The document id is the record's DOI / PMID key, so a
document can be matched against `forum.evidence_records`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from forum_atlas.evidence.model import EvidenceItem
from forum_atlas.evidence.router import GatherResult

# Stored source metadata (importance / quality 1–5 as in SourceInfo); constant per source, since
# ingestion refuses input that silently changes a stored source.
SOURCE_INFO: dict[str, dict] = {
    "pubmed": {"name": "PubMed (NCBI E-utilities)", "importance": 4, "quality_score": 4,
               "url": "https://pubmed.ncbi.nlm.nih.gov/"},
    "cochrane": {"name": "Cochrane reviews (via PubMed)", "importance": 5, "quality_score": 5,
                 "url": "https://www.cochranelibrary.com/"},
    "pmc": {"name": "PubMed Central Open Access", "importance": 4, "quality_score": 4,
            "url": "https://pmc.ncbi.nlm.nih.gov/"},
    "europepmc": {"name": "Europe PMC", "importance": 4, "quality_score": 4, "url": "https://europepmc.org/"},
    "openalex": {"name": "OpenAlex", "importance": 3, "quality_score": 3, "url": "https://openalex.org/"},
    "crossref": {"name": "Crossref", "importance": 3, "quality_score": 3, "url": "https://www.crossref.org/"},
    "clinicaltrials": {"name": "ClinicalTrials.gov", "importance": 4, "quality_score": 4,
                       "url": "https://clinicaltrials.gov/"},
    "openfda": {"name": "openFDA", "importance": 4, "quality_score": 3, "url": "https://open.fda.gov/"},
    "dailymed": {"name": "DailyMed (NLM)", "importance": 4, "quality_score": 4, "url": "https://dailymed.nlm.nih.gov/"},
    "medlineplus": {"name": "MedlinePlus", "importance": 4, "quality_score": 4, "url": "https://medlineplus.gov/"},
}
DOCUMENT_LICENCE = "per record: open licence or licensed abstract only (evidence licence guard, EVB-2)"
EVIDENCE_SECTOR = "biomedical"
_YEAR = re.compile(r"^\d{4}$")


def document_row(item: EvidenceItem) -> dict:
    info = SOURCE_INFO[item.source]
    return {
        "id": item.dedup_key, "title": item.title or item.dedup_key, "text": item.text, "url": item.url,
        # A bare year would be read as "this day of that year": pin it to 1 January.
        "published_at": f"{item.published}-01-01" if item.published and _YEAR.match(item.published) else item.published,
        "sector": EVIDENCE_SECTOR,
        "source": {**info, "licence": DOCUMENT_LICENCE, "sector": EVIDENCE_SECTOR},
    }


def record_rows(result: GatherResult) -> list[dict]:
    rows = []
    for score, item in result.ranked:
        status = "ingested" if item.may_support else "context_only"
        rows.append(_row(item, status, item.licence_reason, score))
    rows += [_row(item, "excluded", item.excluded_reason, None) for item in result.excluded]
    return rows


def _row(item: EvidenceItem, status: str, reason: str, score: float | None) -> dict:
    return {"record_key": item.dedup_key, "source": item.source, "external_id": item.external_id,
            "title": item.title or item.dedup_key, "body": item.text, "doi": item.doi, "pmid": item.pmid,
            "status": status, "reason": reason or status, "score": score}


def write_documents(result: GatherResult, path: Path) -> int:
    """The records that may support a claim, as JSONL for the ingest flow; returns how many."""
    rows = [document_row(item) for _, item in result.ranked if item.may_support and item.text.strip()]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return len(rows)
