"""Text helpers shared by ingestion, the deliberation and the engines: sentences with exact character
offsets (the chunker's, the audit's), and content terms — lower-cased words outside a stop list, cut to a
5-letter stem so that "fracture"/"fractures" and "supplement"/"supplementation" meet (the offline
coordinator and engine, the prompt's excerpts). Truncation stemming is crude but deterministic and
language-agnostic enough for overlap tests."""

from __future__ import annotations

import re

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace and an
# upper-case letter, digit or opening quote/bracket — or at a blank line. The pattern consumes the
# punctuation mark (group 1 marks that branch) rather than looking behind for it: a pattern that starts
# with a character set lets the regex engine skip ahead to the next candidate, 3–4x faster on long texts.
# A lower-case start also begins a sentence when it is a gene or protein name written with a capital or
# digit inside ("tHcy", "mRNA", "p53", "siRNA"; issue 35).
_SENTENCE_END = re.compile(r"""([.!?])["')\]]*\s+(?=["'(\[]?(?:[A-Z0-9]|[a-z]{1,4}[A-Z0-9]))|\n\s*\n""")
# No sentence ends after an abbreviation: "e.g.", "i.e.", "et al.", "vs.", "Fig.", "Dr." (a single initial may end one: "vitamin D.").
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|et al|vs|cf|ca|approx|Fig|Figs|Eq|Ref|Refs|No|Dr|Prof|Mr|Mrs|Ms|St|"
                           r"Jr|Sr|Inc|Ltd|Corp|Dept|Univ|Vol|pp|resp|incl)\.)$")

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")
STEM_CHARS = 5
STOP_WORDS = frozenset("""a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either few for from further
had has have having he her here hers him his how i if in into is it its itself just may me might more most
must my no nor not now of off on once only or other our out over own same shall she should so some such
than that the their them then there these they this those through to too under until up upon us very
was we were what when where whether which while who whom why will with within without would you your
among amongst per via vs versus yes whose""".split())


def content_words(text: str) -> list[str]:
    """Lower-cased words of 3+ letters outside the stop list, in order of appearance."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if len(w) >= 3 and w not in STOP_WORDS]


def stem(word: str) -> str:
    return word[:STEM_CHARS]


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """`text[start:end]` without the whitespace at either end, as (start, end)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, whitespace excluded."""
    spans = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end(1) if match.lastindex else match.start()
        if match.lastindex and _ABBREVIATION.search(text, max(end - 8, position), end):
            continue
        # most sentences need no trimming: test before paying for the call
        spans.append(trim_span(text, position, end) if text[position:position + 1].isspace() or
                     text[end - 1:end].isspace() else (position, end))
        position = match.end()
    spans.append(trim_span(text, position, len(text)))
    return [(s, e) for s, e in spans if e > s]
