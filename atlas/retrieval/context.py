"""The per-source context budget (RET-4: at most 4,000 characters of context per source)."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def cap_context(text: str, max_chars: int) -> tuple[str, bool]:
    """(text cut to at most `max_chars`, whether it was cut).

    A cut ends at the last sentence end inside the budget, else at the last whitespace, so a
    passage is never split mid-word when it can be avoided; only an unbroken run is cut hard.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    if len(text) <= max_chars:
        return text, False
    window = text[:max_chars + 1]  # one extra character tells whether the cut falls on a boundary
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    if ends and ends[-1] > max_chars // 2:
        return text[:ends[-1]].rstrip(), True
    space = window.rfind(" ", 0, max_chars + 1)
    if space > max_chars // 2:
        return text[:space].rstrip(), True
    return text[:max_chars], True
