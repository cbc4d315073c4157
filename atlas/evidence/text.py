"""Small text helpers for source payloads."""

from __future__ import annotations

import html
import re

_TAG = re.compile(r"<[^>]+>")


def strip_markup(text: str) -> str:
    """Plain text from an abstract that carries JATS/HTML tags (Crossref, Europe PMC)."""
    return " ".join(html.unescape(_TAG.sub(" ", text)).split())


def from_inverted_index(index: dict[str, list[int]] | None) -> str:
    """OpenAlex ships abstracts as {word: [positions]}; put the words back in order."""
    if not index:
        return ""
    positions = sorted((pos, word) for word, places in index.items() for pos in places)
    return " ".join(word for _, word in positions)
