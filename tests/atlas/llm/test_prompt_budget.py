"""The prompt budget: passages fitted to the model's context around their best-matching sentences."""

from __future__ import annotations

from forum_atlas.deliberation.model import Passage
from forum_atlas.llm.prompt_budget import (
    CHARS_PER_TOKEN,
    excerpt,
    fit_passages,
    passage_chars_available,
    sentence_spans,
)

TEXT = ("Aspirin was given to 400 adults. Bleeding events were rare. The trial ran in Norway. "
        "Stroke risk fell by 12 percent with aspirin. Follow-up lasted two years.")


def passage(n: int, text: str, title: str = "T") -> Passage:
    return Passage(label=f"S{n}", chunk_id=n, document_id=n, document_version=1, title=title, text=text,
                   source_name="x")


def test_sentences_cover_the_text():
    spans = sentence_spans(TEXT)
    assert [TEXT[a:b] for a, b in spans][:2] == ["Aspirin was given to 400 adults.", "Bleeding events were rare."]
    assert " ".join(TEXT[a:b] for a, b in spans) == TEXT
    assert sentence_spans("no end mark") == [(0, 11)] and sentence_spans("") == []


def test_a_text_that_fits_is_shown_whole():
    assert excerpt(TEXT, "stroke", len(TEXT)) == TEXT


def test_the_best_matching_sentences_are_kept_in_order_with_gaps_marked():
    shown = excerpt(TEXT, "aspirin stroke risk", 90)
    assert shown == "Aspirin was given to 400 adults. […] Stroke risk fell by 12 percent with aspirin. […]"
    assert len(shown) <= 90
    assert excerpt(TEXT, "stroke", 52) == "[…] Stroke risk fell by 12 percent with aspirin. […]"
    # the best sentence is never passed over for a weaker one that fits: it is shown without the marks, or cut
    assert excerpt(TEXT, "stroke", 50) == "Stroke risk fell by 12 percent with aspirin."
    assert excerpt(TEXT, "stroke", 30) == "Stroke risk fell by 12 percent"


def test_a_sentence_longer_than_the_share_is_cut_at_a_word():
    shown = excerpt("word " * 100, "word", 42)
    assert len(shown) <= 42 and not shown.endswith(" ") and shown.split() == ["word"] * len(shown.split())
    assert excerpt(TEXT, "x", 0) == ""


def test_the_budget_is_what_the_context_leaves_beside_prompt_and_answer():
    assert passage_chars_available(2048, 512, "") == int((2048 - 512 - 64) * CHARS_PER_TOKEN)
    assert passage_chars_available(2048, 512, "x" * 32) == int((2048 - 512 - 10 - 64) * CHARS_PER_TOKEN)
    assert passage_chars_available(600, 512, "x" * 1000) == 0


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
