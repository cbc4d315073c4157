"""The coordinator's plan (DEL-1): which specialists a question calls for, each one's topic and
retrieval focus, and why — decided by a deterministic rule over the de-identified question.

Each specialist has a lexicon of stems; a question that touches a lexicon calls that specialist.
The technical specialist (mechanisms, effects, methods, measured evidence) is the default when no
other lexicon is touched, and joins whenever the question asks about an effect or a cause. A caller
may name the specialists instead; the reason then says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from forum_atlas.deliberation.deidentify import deidentify
from forum_atlas.deliberation.model import SPECIALISTS, PersonaAssignment, Plan
from forum_atlas.text import content_words, stem

PLANNER = "keyword-coordinator v1"
# Stems (first 5 letters) that call each specialist.
LEXICONS: dict[str, frozenset[str]] = {
    "legal_regulatory": frozenset("""regul law legal legis compl polic statu court licen permi mandat
        guide direc liabi right juris sanct conse ethic appro accre""".split()),
    "financial": frozenset("""cost price budge fund funds marke econo reven inves finan tarif taxes
        spend infla insur reimb affor profi money subsi wage wages debt""".split()),
    "technical": frozenset("""effec cause cause mecha effic trial study studi metho techn perfo reduc
        incre decre lower raise risk risks assoc impro treat thera dose doses outco benef harm""".split()),
    "geospatial": frozenset("""regio count city citie map maps locat geogr spati rural urban borde
        latit terri provi distr clima coast conti globa natio""".split()),
    "forecasting": frozenset("""forec predi futur trend outlo proje proba likel expec chanc next
        horiz scena""".split()),
}
FOCUS_TERMS = {
    "legal_regulatory": "regulation guideline law approval requirement",
    "financial": "cost economic price funding",
    "technical": "",
    "geospatial": "region country geographic location",
    "forecasting": "trend projection future outlook",
}
TOPICS = {
    "legal_regulatory": "the legal and regulatory position",
    "financial": "costs and financial effects",
    "technical": "the technical and scientific evidence",
    "geospatial": "where it applies geographically",
    "forecasting": "what is likely to happen next",
}


class PlanError(ValueError):
    """The request names a specialist the panel does not have."""


def plan_panel(question: str, personas: Sequence[str] | None = None) -> Plan:
    """De-identify the question, then choose the panel. The raw question never leaves here."""
    outbound, redactions = deidentify(question)
    words = content_words(outbound)
    chosen: list[tuple[str, str]] = []
    if personas:
        unknown = [p for p in personas if p not in SPECIALISTS]
        if unknown:
            raise PlanError(f"unknown specialist(s) {', '.join(map(repr, unknown))}; "
                            f"the panel has: {', '.join(SPECIALISTS)}")
        chosen = [(role, "named in the request") for role in dict.fromkeys(personas)]
    else:
        for role in SPECIALISTS:
            hits = [w for w in dict.fromkeys(words) if stem(w) in LEXICONS[role]]
            if hits:
                chosen.append((role, f"the question mentions {', '.join(hits[:4])}"))
        if not any(role == "technical" for role, _ in chosen):
            reason = ("no specialist's terms appear; the technical specialist weighs the evidence itself"
                      if not chosen else "the evidence behind the other specialists' points")
            chosen.insert(0, ("technical", reason))
    assignments = tuple(
        PersonaAssignment(role=role, topic=TOPICS[role], reason=reason,
                          focus_query=" ".join(part for part in (outbound, FOCUS_TERMS[role]) if part))
        for role, reason in chosen)
    return Plan(outbound_question=outbound, redactions=redactions, personas=assignments, planner=PLANNER)
