"""The shared text helpers: sentences with exact offsets, content terms."""

import pytest

from forum_atlas.text import content_words, sentence_spans, stems, trim_span


def test_abbreviations_in_lower_case_do_not_split_sentences():
    spans = sentence_spans("Mean was 1.8 microm2/ms. e.g. values rose. Then fell.")
    text = "Mean was 1.8 microm2/ms. e.g. values rose. Then fell."
    assert [text[s:e] for s, e in spans] == ["Mean was 1.8 microm2/ms. e.g. values rose.", "Then fell."]


@pytest.mark.parametrize(("text", "sentences"), [
    # a lower-case gene or protein name starts a sentence (issue 35)
    ("Levels of vitamin D. tHcy fell by 20%. mRNA rose. p53 was absent.",
     ["Levels of vitamin D.", "tHcy fell by 20%.", "mRNA rose.", "p53 was absent."]),
    # no sentence ends after an abbreviation; a single capital may end one
    ("Drugs (e.g. Aspirin) work. Fig. 2 shows it. Group A. Then it fell.",
     ["Drugs (e.g. Aspirin) work.", "Fig. 2 shows it.", "Group A.", "Then it fell."]),
    # a lower-case ordinary word after a full stop does not start a sentence
    ("It rose to 5.2 mg. then it fell.", ["It rose to 5.2 mg. then it fell."]),
])
def test_sentences_start_at_gene_names_and_not_after_abbreviations(text, sentences):
    assert [text[s:e] for s, e in sentence_spans(text)] == sentences


def test_trim_span_drops_the_whitespace_at_either_end():
    assert trim_span("  a b \n", 0, 7) == (2, 5) and trim_span("   ", 0, 3) == (3, 3)


def test_content_terms_skip_stop_words_and_meet_on_a_five_letter_stem():
    assert content_words("The fractures of the hip and a supplement") == ["fractures", "hip", "supplement"]
    assert stems("fracture supplementation") == stems("the fractures, a supplement") == {"fract", "suppl"}
