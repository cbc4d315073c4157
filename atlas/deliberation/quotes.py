"""The verbatim rule for quotes (DEL-3), in plain Python.

A quote matches a passage when, after whitespace normalisation, it occurs in the passage with whole
words at both ends (rule `whole-words-v2`, sql/080): where the quote begins (ends) with a word
character, the passage character just before (after) it is not one, so "related to risk" does not
match inside "unrelated to risk". Briefs sealed before that rule used a plain substring
(`substring-v1`). Normalisation turns every run of whitespace into one space and trims both ends; case
and punctuation are kept, so a changed capital or comma fails. "Whitespace" is exactly what
`str.split()` splits on (ASCII \\t \\n \\v \\f \\r and space, \\x1c-\\x1f, \\x85, \\xa0, \\u1680,
\\u2000-\\u200a, \\u2028, \\u2029, \\u202f, \\u205f, \\u3000); the database function
`forum.citation_verbatim_matches` uses the same set, and a test holds the two together.

A word character is any character that is neither whitespace nor in `NON_WORD_RANGES` (ASCII, Latin-1
and general punctuation and symbols, arrows and mathematical symbols, CJK punctuation): letters,
digits and marks of every script. The set is spelled out so that the database, whatever its locale,
answers alike (`forum.is_word_char`; a test compares the two over every code point).

One difference is forgiven because it is only layout (sql/091): a quote copied from a PDF viewer keeps a
word's line-break hyphen ("recom- mended", "T- cell") where the stored text has the word whole. Such a quote
also matches, with whole words, in two readings: hyphen and space dropped between lower-case ASCII letters and the space alone
dropped elsewhere ("recommended", "T-cell"), or the space alone dropped everywhere ("well-known"). Case,
punctuation and wording must still be exact.
"""

from __future__ import annotations

import re
from bisect import bisect_right

SUBSTRING_V1 = "substring-v1"
WHOLE_WORDS_V2 = "whole-words-v2"
VERBATIM_RULE = WHOLE_WORDS_V2

# The characters str.split() treats as whitespace (Python 3.11, every code point checked by tests).
WHITESPACE = frozenset(
    "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


# Inclusive code-point ranges of the characters that are not word characters (sql/080's class).
NON_WORD_RANGES = ((0x09, 0x0D), (0x1C, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E), (0x85, 0x85),
                   (0xA0, 0xBF), (0xD7, 0xD7), (0xF7, 0xF7), (0x1680, 0x1680), (0x2000, 0x206F),
                   (0x2190, 0x23FF), (0x3000, 0x303F))
_RANGE_STARTS = [start for start, _ in NON_WORD_RANGES]


def is_word_char(ch: str) -> bool:
    i = bisect_right(_RANGE_STARTS, ord(ch)) - 1
    return i < 0 or ord(ch) > NON_WORD_RANGES[i][1]


def whole_word_positions(haystack: str, needle: str) -> list[int]:
    """Every position where `needle` occurs in `haystack` with whole words at both ends."""
    if not needle:
        return []
    guard_start, guard_end = is_word_char(needle[0]), is_word_char(needle[-1])
    found = []
    at = haystack.find(needle)
    while at >= 0:
        end = at + len(needle)
        if ((not guard_start or at == 0 or not is_word_char(haystack[at - 1]))
                and (not guard_end or end == len(haystack) or not is_word_char(haystack[end]))):
            found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def whole_words_at(haystack: str, needle: str) -> int:
    """The first position where `needle` occurs in `haystack` with whole words at both ends, or -1."""
    return next(iter(whole_word_positions(haystack, needle)), -1)


def normalize_whitespace(text: str) -> str:
    """Every run of whitespace becomes one space; both ends trimmed."""
    return " ".join(text.split())


_BROKEN_WORD = re.compile(r"([A-Za-z0-9])- (?=[A-Za-z0-9])")
_BROKEN_LOWER_WORD = re.compile(r"([a-z])- (?=[a-z])")


def quote_readings(quote: str) -> list[str]:
    """The normalised quote, then (if it has a word broken by a line-break hyphen) its two rejoined readings."""
    needle = normalize_whitespace(quote)
    if not needle or not _BROKEN_WORD.search(needle):
        return [needle] if needle else []
    joined = _BROKEN_WORD.sub(r"\1-", _BROKEN_LOWER_WORD.sub(r"\1", needle))
    return [needle, joined, _BROKEN_WORD.sub(r"\1-", needle)]


def quote_in_passage(quote: str | None, passage: str | None, rule: str = VERBATIM_RULE) -> bool:
    """True iff the quote, whitespace-normalised (or one of its rejoined readings), occurs in the
    whitespace-normalised passage under `rule`: whole words by default; `substring-v1`, the plain
    substring of the quote itself, for briefs sealed before it. An empty or whitespace-only quote never
    matches."""
    if quote is None or passage is None:
        return False
    haystack = normalize_whitespace(passage)
    if rule == SUBSTRING_V1:
        needle = normalize_whitespace(quote)
        return bool(needle) and needle in haystack
    if rule != WHOLE_WORDS_V2:
        raise ValueError(f"unknown verbatim rule {rule!r}")
    return any(whole_words_at(haystack, needle) >= 0 for needle in quote_readings(quote))


def quote_span(quote: str | None, passage: str | None) -> tuple[int, int] | None:
    """The first of `quote_spans`, or None."""
    return next(iter(quote_spans(quote, passage)), None)


def quote_spans(quote: str | None, passage: str | None) -> list[tuple[int, int]]:
    """Every [start, end) character span of the ORIGINAL passage that the quote matches modulo
    whitespace with whole words, in order, for highlighting and for reading the quote's sentence.

    The span starts and ends on non-whitespace characters: `passage[start:end]`, normalised,
    equals the normalised quote."""
    if quote is None or passage is None:
        return []
    readings = quote_readings(quote)
    if not readings:
        return []
    # The normalised passage, with each of its characters mapped back to the original: a kept
    # character to itself, a collapsed run of whitespace to the run's first character.
    chars: list[str] = []
    origin: list[int] = []
    i, n = 0, len(passage)
    while i < n:
        if passage[i] in WHITESPACE:
            j = i
            while j < n and passage[j] in WHITESPACE:
                j += 1
            if chars and j < n:            # interior runs only: both ends are trimmed
                chars.append(" ")
                origin.append(i)
            i = j
        else:
            chars.append(passage[i])
            origin.append(i)
            i += 1
    haystack = "".join(chars)
    # The first reading found (the quote as written before its rejoined readings); each needle neither
    # starts nor ends with a space, so both ends map to real characters.
    for needle in readings:
        found = whole_word_positions(haystack, needle)
        if found:
            return [(origin[at], origin[at + len(needle) - 1] + 1) for at in found]
    return []
