"""Deterministic ranking across sources, after merging duplicates by DOI / PMID.

Score = reciprocal-rank fusion (k = 60) of the source's own order and the order by query-term
coverage (title ×2, text, a small bonus for what may support a claim and for full text); ties break
on the record key, so the same inputs always give the same order. Duplicates (same DOI, or same
PMID) merge into the copy with the most text; the others are
named in its notes, and a retraction flag from any copy is kept.
"""

from __future__ import annotations

import re

from forum_atlas.evidence.model import EvidenceItem

RRF_K = 60
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "does", "do", "for", "from", "has", "have", "in",
                   "is", "it", "of", "on", "or", "the", "to", "was", "were", "what", "which", "with", "how", "can",
                   "will", "vs", "versus"})


def terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def deduplicate(items: list[EvidenceItem]) -> list[EvidenceItem]:
    groups: list[list[EvidenceItem]] = []
    where: dict[str, int] = {}
    for item in items:
        keys = [k for k in (f"doi:{item.doi}" if item.doi else None, f"pmid:{item.pmid}" if item.pmid else None,
                            f"{item.source}:{item.external_id}") if k]
        hits = sorted({where[k] for k in keys if k in where})
        if not hits:
            groups.append([item])
            target = len(groups) - 1
        else:
            target = hits[0]
            for other in hits[1:]:       # the item links two groups (DOI in one, PMID in another)
                groups[target] += groups[other]
                groups[other] = []
                for key, index in where.items():
                    if index == other:
                        where[key] = target
            groups[target].append(item)
        for key in keys:
            where[key] = target
    merged = []
    for group in filter(None, groups):
        best = max(group, key=lambda i: (len(i.text), i.source, i.external_id))
        for other in group:
            if other is best:
                continue
            best.doi, best.pmid = best.doi or other.doi, best.pmid or other.pmid
            best.retracted = best.retracted or other.retracted
            best.notes.append(f"also in {other.source} as {other.external_id}"
                              + (" (marked retracted there)" if other.retracted else ""))
        merged.append(best)
    return merged


def coverage(query_terms: set[str], item: EvidenceItem) -> float:
    if not query_terms:
        return 0.0
    in_title = len(query_terms & terms(item.title)) / len(query_terms)
    in_text = len(query_terms & terms(item.text)) / len(query_terms)
    return 2.0 * in_title + in_text + (0.25 if item.may_support else 0.0) + (0.1 if item.kind == "full_text" else 0.0)


def rank(query: str, items: list[EvidenceItem], *, k: int = RRF_K) -> list[tuple[float, EvidenceItem]]:
    """Reciprocal-rank fusion of two orders: each source's own relevance order (its search engine
    knows its corpus) and query-term coverage (comparable across sources)."""
    query_terms = terms(query)
    by_coverage = sorted(items, key=lambda i: (-coverage(query_terms, i), i.dedup_key))
    coverage_rank = {id(item): position for position, item in enumerate(by_coverage)}
    scored = [(round(1.0 / (k + item.source_rank + 1) + 1.0 / (k + coverage_rank[id(item)] + 1), 8), item)
              for item in items]
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].dedup_key))
