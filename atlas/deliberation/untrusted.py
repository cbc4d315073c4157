"""Model output is untrusted input: what a claim or a quote may contain before anything hashes,
stores or renders it.

- `MAX_CLAIM_CHARS` (1,000) and `MAX_QUOTE_CHARS` (1,500) bound a claim and a quote. A persona's
  claim is one or two sentences and a quote one contiguous span of a passage that is itself capped
  at 4,000 characters (RET-4); anything longer is not a claim but a dump, and the audit's cost must
  not grow with it. A longer claim is cut to the bound (with a note), a longer quote is refused.
- NUL, lone surrogates (they cannot be encoded as UTF-8, so they crash hashing), C0/C1 control
  characters other than whitespace, and invisible format characters (zero-width spaces and
  joiners, bidi overrides, soft hyphens: Unicode category Cf) are removed from a claim and named.
  A quote holding any of them is refused, never cleaned: cleaning would make a doctored quote match.
- Tag-like and pill-like text inside a claim (`[SOURCED]`, `[INFERRED]`, a leading `S3 · `) is
  removed, so a claim can never display a tag the audit did not give it; a citation mark such as
  `[S3]` is dropped quietly (the citation is the claim's `source`, not its text).

A claim whose text had to be changed loses a [SOURCED] tag (`unsafe_text`): what was cited is not
what is published. Nothing here raises: one bad claim never fails the brief.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_CLAIM_CHARS = 1000
MAX_QUOTE_CHARS = 1500
_WHITESPACE_CONTROLS = frozenset("\t\n\v\f\r\x1c\x1d\x1e\x1f\x85")
_TAG_WORD = re.compile(r"\[\s*(?:sourced|inferred)\s*\]", re.IGNORECASE)
_LABEL_MARK = re.compile(r"\s*\[\s*(?:s\d+|chunk\s*:\s*\d+)\s*\]", re.IGNORECASE)  # "… [S3]": a citation mark
_PILL_PREFIX = re.compile(r"^\s*(?:S\d+|chunk:\d+)\s*[·•|]\s*", re.IGNORECASE)


@dataclass(frozen=True)
class CleanText:
    text: str
    problems: tuple[str, ...] = ()   # what was removed or cut, in words (empty: the text is as written)


def _unsafe(ch: str) -> str | None:
    """Why a character may not stand in model text, or None."""
    code = ord(ch)
    if code == 0:
        return "NUL"
    if 0xD800 <= code <= 0xDFFF:
        return "lone surrogate"
    if ch in _WHITESPACE_CONTROLS:
        return None
    category = unicodedata.category(ch)
    if category == "Cc":
        return "control character"
    if category == "Cf":
        return "invisible format character"
    return None


def unsafe_characters(text: str) -> list[str]:
    """The kinds of unsafe characters in `text` (distinct, in order of first appearance)."""
    found: dict[str, None] = {}
    for ch in text:
        if ord(ch) < 0x20 or ord(ch) >= 0x7F:  # ASCII text is checked without a lookup per character
            kind = _unsafe(ch)
            if kind:
                found.setdefault(kind)
    return list(found)


def _without_unsafe(text: str) -> str:
    return "".join(ch for ch in text if not ((ord(ch) < 0x20 or ord(ch) >= 0x7F) and _unsafe(ch)))


def clean_claim(text: str) -> CleanText:
    """A claim as it may be published: bounded, without unsafe characters or tag-like text."""
    problems: list[str] = []
    if len(text) > MAX_CLAIM_CHARS:
        problems.append(f"claim of {len(text):,} characters cut to the {MAX_CLAIM_CHARS:,}-character limit")
        text = text[:MAX_CLAIM_CHARS] + "…"
    kinds = unsafe_characters(text)
    if kinds:
        problems.append(f"removed {', '.join(kinds)}")
        text = _without_unsafe(text)
    # look-alike brackets and letters (fullwidth "［SOURCED］") are read as what they look like
    folded = unicodedata.normalize("NFKC", text)
    untagged = _PILL_PREFIX.sub("", _TAG_WORD.sub("", folded))
    if untagged != folded:
        problems.append("removed tag-like text")
    else:
        untagged = text
    text = _LABEL_MARK.sub("", untagged)
    text = " ".join(text.split())
    return CleanText(text or "(empty claim)", tuple(problems))


def quote_problem(quote: str) -> str | None:
    """Why a quote is refused as model output, or None."""
    if len(quote) > MAX_QUOTE_CHARS:
        return f"quote of {len(quote):,} characters is over the {MAX_QUOTE_CHARS:,}-character limit"
    kinds = unsafe_characters(quote)
    return f"quote holds {', '.join(kinds)}" if kinds else None


def clean_note(text: str | None, limit: int = 500) -> str | None:
    """Free text from a model that is stored but never cited (an insufficient-evidence reason):
    bounded and stripped of unsafe characters."""
    if text is None:
        return None
    return " ".join(_without_unsafe(text[:limit]).split())
