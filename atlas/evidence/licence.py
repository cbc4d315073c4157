"""Licence guard (EVB-2): only a licensed abstract, open full text or a curated recommendation may
support a claim; anything else is kept as context only, with the reason.

Open: a Creative Commons / CC0 / public-domain licence stated for the item, or a US-Government work
(openFDA, ClinicalTrials.gov, DailyMed, MedlinePlus). Licensed abstracts: PubMed and Europe PMC
abstracts, which their terms let us quote with attribution. Everything else — no licence stated,
"none", "other-oa", a publisher's own terms — is context only.
"""

from __future__ import annotations

import re

from forum_atlas.evidence.model import EvidenceItem

_OPEN = re.compile(r"(?i)creativecommons\.org|\bcc[ -]?(?:by|0|zero)\b|creative commons|public[ -]domain"
                   r"|open\.fda\.gov/license|us government work|\bpd\b")
LICENSED_ABSTRACT_SOURCES = frozenset({"pubmed", "cochrane", "europepmc"})
CURATED_SOURCES = frozenset({"medlineplus", "dailymed"})


def judge(item: EvidenceItem) -> tuple[bool, str]:
    """(may support a claim, why)."""
    if not item.text.strip():
        return False, "context only: no text to quote (metadata record)"
    licence = item.licence or ""
    if _OPEN.search(licence):
        return True, f"open licence: {licence[:80]}"
    if item.source in CURATED_SOURCES:
        return True, f"curated recommendation ({item.source})"
    if item.source in LICENSED_ABSTRACT_SOURCES and item.kind == "abstract" and licence:
        return True, f"licensed abstract: {licence}"
    if not licence:
        return False, f"context only: {item.source} states no licence for this {item.kind}"
    return False, f"context only: licence {licence[:80]!r} is not an open licence"


def apply_licence_guard(items: list[EvidenceItem]) -> list[EvidenceItem]:
    for item in items:
        item.may_support, item.licence_reason = judge(item)
    return items
