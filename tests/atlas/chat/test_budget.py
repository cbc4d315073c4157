"""The prompt's budget: what the context leaves for passages, and a long passage shown around its
best-matching sentences."""

from __future__ import annotations

from forum_atlas.chat.budget import CHARS_PER_TOKEN, excerpt, passage_chars_available, sentence_spans

TEXT = ("Aspirin was given to 400 adults. Bleeding events were rare. The trial ran in Norway. "
        "Stroke risk fell by 12 percent with aspirin. Follow-up lasted two years.")


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
