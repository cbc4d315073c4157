"""The offline extractive engine: [SOURCED] sentences copied from the passages (one per passage), and one
closing [INFERRED] statement that reads as written for one source or several."""

from __future__ import annotations

from forum_atlas.deliberation.model import DraftRequest, Passage, PersonaAssignment
from forum_atlas.llm.offline_deliberation import OfflineDeliberationEngine

PERSONA = PersonaAssignment(role="technical", topic="the technical evidence", focus_query="grid storage",
                            reason="the question is technical")


def _passage(label: str, text: str) -> Passage:
    return Passage(label=label, chunk_id=int(label[1:]), document_id=int(label[1:]), document_version=1,
                   title=f"paper {label}", text=text, source_name="test")


def _closing(passages: tuple[Passage, ...]) -> str:
    reply = OfflineDeliberationEngine().draft(DraftRequest("How does grid storage change prices?", PERSONA, passages))
    assert [c.tag for c in reply.claims].count("INFERRED") == 1
    return reply.claims[-1].text


def test_one_source_is_named_in_the_singular():
    text = "Grid storage lowered peak prices in 2021. Grid storage also changes prices at night."
    assert _closing((_passage("S1", text),)) == (
        "S1 bears on the technical evidence; that it answers the question as asked is the panel's inference, "
        "not a finding the source states.")


def test_several_sources_are_read_together():
    closing = _closing((_passage("S1", "Grid storage lowered peak prices in 2021."),
                        _passage("S2", "Storage on the grid changes prices by hour.")))
    assert closing.startswith("Read together, S2, S1 bear on the technical evidence;")  # best-matching first
