"""The offline extractive engine: [SOURCED] sentences copied from the passages (one per passage), the one that
answers the question rather than the document's title, and one closing [INFERRED] statement that reads as
written for one source or several."""

from __future__ import annotations

import pytest

from forum_atlas.deliberation.model import DraftRequest, Passage, PersonaAssignment
from forum_atlas.ingestion.chunking import chunk_text
from forum_atlas.ingestion.documents import read_document
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
                        _passage("S2", "Grid storage changes prices by the hour and lowered them at peak.")))
    assert closing.startswith("Read together, S2, S1 bear on the technical evidence;")  # best-matching first


# --- the answering sentence (issue 36): real documents read by the real readers ---------------------

PAPER = "10.1038_s41467-024-44806-1.pdf"


def _document_passages(path) -> tuple[Passage, ...]:
    """The file read and chunked as ingestion does it, each chunk a passage titled as the document."""
    document = read_document(path)
    return tuple(Passage(label=f"S{i}", chunk_id=i, document_id=1, document_version=1, title=document.title,
                         text=chunk.text, source_name="test") for i, chunk in enumerate(chunk_text(document.text), 1))


def _quotes(question: str, passages: tuple[Passage, ...]) -> list[str]:
    reply = OfflineDeliberationEngine().draft(DraftRequest(question, PERSONA, passages))
    return [" ".join(c.quote.split()) for c in reply.claims if c.tag == "SOURCED"]


@pytest.mark.parametrize("fixture, question, answer", [
    ("apiary.docx", "How much honey did the apiary produce in 2023?", "148 kilograms"),
    ("rainwater.html", "How much rainwater did the Millbrook school tanks collect?", "12,000 litres"),
])
def test_a_how_much_question_quotes_the_quantity_not_the_title(fixtures_dir, fixture, question, answer):
    passages = _document_passages(fixtures_dir / fixture)
    title = passages[0].title
    assert passages[0].text.startswith(title)   # the title is the text's first line, sharing the question's words
    quotes = _quotes(question, passages)
    assert quotes and answer in quotes[0]
    assert title not in quotes


def test_the_papers_brief_quotes_the_temperature_asked_for(shared_data):
    quotes = _quotes("What was the optimal growth temperature of the Asgard archaea ancestor of eukaryotes?",
                     _document_passages(shared_data / "documents" / "papers" / PAPER))
    assert "with an optimal growth temperature around 53 °C" in quotes[0]


def test_a_question_of_no_kind_prefers_a_finding_to_an_aim():
    aim = "We aimed to determine whether grid storage changes wholesale electricity prices."
    finding = "Grid storage lowered wholesale electricity prices by 8 % at peak hours."
    assert _quotes("Grid storage lowers wholesale electricity prices.", (_passage("S1", f"{aim} {finding}"),)) == [finding]


def test_a_when_question_quotes_the_year_and_a_who_question_the_name():
    text = ("The grid storage plant was planned by the regional council. Grid storage started at the plant in 2019. "
            "The grid storage plant was built by Northwind Energy Ltd.")
    assert _quotes("When did grid storage start at the plant?", (_passage("S1", text),)) == [
        "Grid storage started at the plant in 2019."]
    assert _quotes("Who built the grid storage plant?", (_passage("S1", text),)) == [
        "The grid storage plant was built by Northwind Energy Ltd."]


def test_a_passage_that_is_only_its_heading_is_insufficient():
    reply = OfflineDeliberationEngine().draft(DraftRequest(
        "How much does grid storage cost?", PERSONA, (_passage("S1", "Grid Storage Cost Review\n\nAppendix"),)))
    assert not reply.claims and "shares the question's specific terms" in reply.insufficient
