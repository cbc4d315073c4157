"""Content terms for the offline coordinator and engine: lower-cased words outside a stop list,
cut to a 5-letter stem so that "fracture"/"fractures" and "supplement"/"supplementation" meet.
Truncation stemming is crude but deterministic and language-agnostic enough for overlap tests."""

from __future__ import annotations

import re

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
