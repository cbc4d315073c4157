"""The verbatim rule for quotes (DEL-3), in plain Python.

A quote matches a passage when, after whitespace normalisation, it occurs in the passage as a
substring. Normalisation turns every run of whitespace into one space and trims both ends; case
and punctuation are kept, so a changed capital or comma fails. "Whitespace" is exactly what
`str.split()` splits on (ASCII \\t \\n \\v \\f \\r and space, \\x1c-\\x1f, \\x85, \\xa0, \\u1680,
\\u2000-\\u200a, \\u2028, \\u2029, \\u202f, \\u205f, \\u3000); the database function
`forum.citation_verbatim_matches` uses the same set, and a test holds the two together.

One difference is forgiven because it is only layout (sql/091): a quote copied from a PDF viewer keeps a
word's line-break hyphen ("recom- mended", "T- cell") where the stored text has the word whole. Such a quote
also matches in two readings: hyphen and space dropped between lower-case ASCII letters and the space alone
dropped elsewhere ("recommended", "T-cell"), or the space alone dropped everywhere ("well-known"). Case,
punctuation and wording must still be exact.
"""

from __future__ import annotations

import re

# The characters str.split() treats as whitespace (Python 3.11, every code point checked by tests).
WHITESPACE = frozenset(
    "\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


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


def quote_in_passage(quote: str | None, passage: str | None) -> bool:
    """True iff the quote, whitespace-normalised (or one of its rejoined readings), occurs in the
    whitespace-normalised passage. An empty or whitespace-only quote never matches."""
    if quote is None or passage is None:
        return False
    haystack = normalize_whitespace(passage)
    return any(needle in haystack for needle in quote_readings(quote))


def quote_span(quote: str | None, passage: str | None) -> tuple[int, int] | None:
    """The [start, end) character span of the ORIGINAL passage that the quote matches modulo
    whitespace (its first occurrence), for highlighting; None when it does not match.

    The span starts and ends on non-whitespace characters: `passage[start:end]`, normalised,
    equals the normalised quote."""
    if quote is None or passage is None:
        return None
    readings = quote_readings(quote)
    if not readings:
        return None
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
    for needle in readings:
        at = haystack.find(needle)
        if at >= 0:
            # The needle neither starts nor ends with a space, so both ends map to real characters.
            return origin[at], origin[at + len(needle) - 1] + 1
    return None
