"""The prompt budget: passages fitted to the model's context around their best-matching sentences."""

from __future__ import annotations

from forum_atlas.deliberation.model import Passage
from forum_atlas.llm.prompt_budget import fit_passages


def passage(n: int, text: str, title: str = "T") -> Passage:
    return Passage(label=f"S{n}", chunk_id=n, document_id=n, document_version=1, title=title, text=text,
                   source_name="x")


def test_short_passages_leave_their_share_to_long_ones_and_the_total_fits():
    long_text = " ".join(f"Sentence {n} about aspirin and stroke in adults." for n in range(80))
    shown = fit_passages([passage(1, "Short."), passage(2, long_text), passage(3, long_text)], "aspirin stroke", 1500)
    assert [s.label for s in shown] == ["S1", "S2", "S3"]
    assert shown[0].text == "Short." and not shown[0].trimmed
    assert shown[1].trimmed and shown[2].trimmed and len(shown[1].text) > 600
    assert sum(len(s.block()) for s in shown) + 2 * 2 <= 1500


def test_the_lowest_ranked_passages_are_left_out_when_even_an_excerpt_does_not_fit():
    text = "A sentence of forty characters or so. " * 20
    shown = fit_passages([passage(n, text) for n in range(1, 6)], "sentence", 600)
    assert [s.label for s in shown] == ["S1", "S2", "S3"]
    assert sum(len(s.block()) for s in shown) <= 600
    assert [s.label for s in fit_passages([passage(1, text)], "x", 10)] == ["S1"]  # one passage is always shown
    assert fit_passages([], "x", 1000) == []


def test_a_huge_title_is_capped():
    (shown,) = fit_passages([passage(1, "Body.", title="Title " * 500)], "x", 5000)
    assert len(shown.title) <= 200 and shown.text == "Body."
