"""The verbatim rule in plain Python (DEL-3): whole words, whitespace normalised, case and punctuation
kept. The database function is held to the same answers in tests/store/test_briefs.py and
tests/store/test_verbatim_rules.py."""

import pytest

from forum_atlas.deliberation.quotes import (
    SUBSTRING_V1,
    WHITESPACE,
    is_word_char,
    normalize_whitespace,
    quote_in_passage,
    quote_span,
)

PASSAGE = "The regulator,\tOfgem,  approved the\u00a0cap-and-floor regime\non 3 May.  It said “no further review”."


def test_the_whitespace_set_is_exactly_what_str_split_splits_on():
    python = {chr(cp) for cp in range(0x110000) if not (0xD800 <= cp <= 0xDFFF) and not chr(cp).split()}
    assert python == set(WHITESPACE)
    assert len(WHITESPACE) == 29


@pytest.mark.parametrize(("text", "expected"), [
    ("  a \t b\n\nc  ", "a b c"),
    ("a\u00a0\u2003b", "a b"),
    ("a\u3000\u2028\u2029\u205f\u202f\u1680\x85\x1c\x1d\x1e\x1f\v\fb", "a b"),
    ("\u200bzero\u200bwidth\ufeff", "\u200bzero\u200bwidth\ufeff"),   # not whitespace: kept
    ("", ""),
    (" \t\n ", ""),
])
def test_normalize_whitespace(text, expected):
    assert normalize_whitespace(text) == expected == " ".join(text.split())


@pytest.mark.parametrize("quote", [
    "approved the cap-and-floor regime on 3 May.",        # plain spaces for NBSP and newline
    "  approved the cap-and-floor regime  ",              # leading/trailing spaces
    "regulator, Ofgem, approved",                          # a tab in the passage
    "regime\n\non\t3\u00a0May.",                           # newlines/tabs/NBSP inside the quote
    "It said “no further review”.",                        # unicode punctuation as in the passage
    "The regulator,",
    "review”.",
])
def test_whitespace_only_differences_match(quote):
    assert quote_in_passage(quote, PASSAGE)


@pytest.mark.parametrize("quote", [
    "The Regulator, Ofgem",                                # case change
    "The regulator Ofgem",                                 # comma removed
    "The regulator; Ofgem",                                # punctuation changed
    'It said "no further review".',                        # straight quotes for curly ones
    "It said “no further review.”",                        # period moved inside the quote
    "cap and floor regime",                                # hyphens dropped
    "Ofgem approved a cap-and-floor regime",               # paraphrase
    "",
    "   \t\n",
    "\u00a0",
])
def test_changed_case_punctuation_or_paraphrase_fails(quote):
    assert not quote_in_passage(quote, PASSAGE)
    assert quote_span(quote, PASSAGE) is None


def test_none_never_matches():
    assert not quote_in_passage(None, PASSAGE)
    assert not quote_in_passage("regime", None)
    assert quote_span(None, PASSAGE) is None and quote_span("regime", None) is None


@pytest.mark.parametrize("quote", [
    "approved the cap-and-floor regime on 3 May.",
    "  approved the cap-and-floor regime  ",
    "regime\n\non\t3\u00a0May.",
    "The regulator, Ofgem,",
    "review”.",
    "3",
    ".",
])
def test_quote_span_points_into_the_original_passage(quote):
    start, end = quote_span(quote, PASSAGE)
    original = PASSAGE[start:end]
    assert normalize_whitespace(original) == normalize_whitespace(quote)
    assert original == original.strip()  # the highlight starts and ends on a character of the quote


def test_quote_span_keeps_the_passage_s_own_whitespace():
    passage = "\n\t  Alpha\u00a0\u00a0 beta\n\ngamma  "
    assert quote_span("Alpha beta gamma", passage) == (4, len(passage) - 2)
    assert passage[4:len(passage) - 2] == "Alpha\u00a0\u00a0 beta\n\ngamma"
    assert quote_span("beta", passage) == (12, 16)
    assert quote_span("a", passage) is None  # "a" stands only inside words
    assert quote_span("gamma", "gammas and gamma") == (11, 16)  # the first whole-word occurrence


def test_a_match_may_not_span_a_collapsed_run_it_does_not_contain():
    # "ab" does not occur in "a b": normalisation collapses runs, it never removes them.
    assert not quote_in_passage("ab", "a b")
    assert quote_span("a b", "a \t\n b") == (0, 6)


@pytest.mark.parametrize(("quote", "passage"), [
    ("related to breast cancer risk", "Both were unrelated to breast cancer risk."),      # starts inside a word
    ("breast cancer risk", "Both were related to breast cancer risks."),                 # ends inside a word
    ("appear to be confounded", "It did not disappear to be confounded."),
    ("5 mg", "a dose of 25 mg daily"),                                                    # digits are word characters
    ("élan", "avec bélan"),                                                               # letters of every script
    ("T", "The trial"),
])
def test_a_quote_must_start_and_end_on_word_boundaries(quote, passage):
    assert not quote_in_passage(quote, passage)
    assert quote_in_passage(quote, passage, SUBSTRING_V1)  # what the old rule let through
    assert quote_span(quote, passage) is None


@pytest.mark.parametrize(("quote", "passage"), [
    ("related to breast cancer risk", "Both were related to breast cancer risk."),
    ("related to breast cancer risk", "unrelated to X, and related to breast cancer risk"),  # a later occurrence
    ("(HR 0.8)", "risk fell(HR 0.8)."),                # punctuation ends need no boundary
    ("risk", "the risk—and"),                          # an em dash is punctuation
    ("5 mg", "a dose of 5 mg daily"),
    ("naïve", "in naïve mice"),
])
def test_whole_word_quotes_match(quote, passage):
    assert quote_in_passage(quote, passage)


def test_word_characters_are_letters_digits_and_marks_not_punctuation_or_symbols():
    assert all(is_word_char(c) for c in "aZ09éßж日\u0301_"[:-1])
    assert not any(is_word_char(c) for c in " .,;:!?'\"()[]{}-–—…“”‘’%±≤×÷°_")


def test_a_line_break_hyphen_from_a_pdf_viewer_is_forgiven_and_nothing_else():
    passage = "It is recommended for the T-cell count, a well-known marker (EF-1A)."
    for quote, highlighted in (("recom- mended for the T- cell count", "recommended for the T-cell count"),
                               ("a well- known marker", "a well-known marker"), ("(EF- 1A).", "(EF-1A)."),
                               ("is recom-\nmended", "is recommended")):
        assert quote_in_passage(quote, passage), quote
        start, end = quote_span(quote, passage)
        assert passage[start:end] == highlighted
    for quote in ("Recom- mended", "recom- mended, for", "recom- mends", "T- Cell", "ecom- mended"):
        assert not quote_in_passage(quote, passage), quote
        assert quote_span(quote, passage) is None
