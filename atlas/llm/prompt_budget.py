"""Fit a prompt's passages to the model's context window.

A model's context (`LLMOptions.context_tokens`, the server's n_ctx) holds the prompt and the answer
(`max_tokens`). What is left after the fixed part of the prompt (instructions, question, answer
format) is shared among the passages: each gets an equal share, and what a short passage does not
use goes to the longer ones. A passage longer than its share is not cut blind at its end: its
sentences are ranked by the content words they share with the question (and the persona's topic),
the best ones are kept up to the share, and they are shown in their original order, with `[…]`
where sentences were left out. A quote copied from what is shown is therefore still verbatim in the
whole passage the audit checks. When even a minimal excerpt per passage does not fit, the
lowest-ranked passages (the last ones) are left out, and their labels with them.

Tokens are estimated from characters (`CHARS_PER_TOKEN`, on the low side for English text with the
BPE vocabularies of GPT-4o, Llama 3 or Qwen 2.5, so an estimate errs towards a shorter prompt).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from forum_atlas.deliberation.model import Passage
from forum_atlas.deliberation.terms import stems

CHARS_PER_TOKEN = 3.2
SAFETY_TOKENS = 64          # chat template tokens around each message, and the estimate's error
MIN_EXCERPT_CHARS = 160     # less than this of a passage is not worth its label
MAX_TITLE_CHARS = 200
GAP = " […] "
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+[\"')\]]*|\n|$)\s*")


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def passage_chars_available(context_tokens: int, max_tokens: int, fixed_prompt: str) -> int:
    """Characters of passage text (headers included) that fit beside `fixed_prompt` and the answer."""
    tokens = context_tokens - max_tokens - estimate_tokens(fixed_prompt) - SAFETY_TOKENS
    return max(0, int(tokens * CHARS_PER_TOKEN))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, trailing whitespace excluded; together they cover the text."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.start(), match.start() + len(match.group(0).rstrip())
        if end > start:
            spans.append((start, end))
    return spans


def _cut(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` at a word boundary where there is one in its second half."""
    if len(text) <= max_chars:
        return text
    space = text.rfind(" ", 0, max_chars + 1)
    return text[:space] if space > max_chars // 2 else text[:max_chars]


def excerpt(text: str, query: str, max_chars: int) -> str:
    """At most `max_chars` of `text`: the sentences sharing most content words with `query`, in the
    text's order, `[…]` between sentences that were not adjacent. The whole text when it fits."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 0:
        return ""
    wanted = stems(query)
    spans = sentence_spans(text)
    ranked = sorted(range(len(spans)),
                    key=lambda i: (-len(wanted & stems(text[spans[i][0]:spans[i][1]])), i))
    if not spans or len(_join(text, spans, [ranked[0]])) > max_chars:
        # the best sentence alone does not fit: as much of it as fits, at a word boundary
        start, end = spans[ranked[0]] if spans else (0, len(text))
        return _cut(text[start:end], max_chars)
    chosen = [ranked[0]]
    for i in ranked[1:]:
        trial = sorted([*chosen, i])
        if len(_join(text, spans, trial)) <= max_chars:
            chosen = trial
    return _join(text, spans, chosen)


def _join(text: str, spans: Sequence[tuple[int, int]], chosen: Sequence[int]) -> str:
    """The chosen sentences in order, `[…]` wherever sentences were left out (before, between, after)."""
    parts: list[str] = []
    for k, i in enumerate(chosen):
        if k and chosen[k - 1] != i - 1:
            parts.append(GAP)
        elif k:
            parts.append(" ")
        parts.append(text[spans[i][0]:spans[i][1]])
    head = "[…] " if chosen and chosen[0] != 0 else ""
    tail = " […]" if chosen and chosen[-1] != len(spans) - 1 else ""
    return head + "".join(parts) + tail


@dataclass(frozen=True)
class ShownPassage:
    label: str
    title: str
    text: str                 # what the prompt shows: the passage, or its best sentences
    trimmed: bool

    def block(self) -> str:
        return f"[{self.label}] {self.title}\n{self.text}"


def fit_passages(passages: Sequence[Passage], query: str, budget_chars: int) -> list[ShownPassage]:
    """The passages as the prompt shows them within `budget_chars` (headers and separators
    included), in their given (rank) order; the lowest-ranked are left out when fewer fit."""
    kept = list(passages)
    while kept:
        titles = [_cut(" ".join(p.title.split()), MAX_TITLE_CHARS) for p in kept]
        overhead = sum(len(f"[{p.label}] {t}\n") for p, t in zip(kept, titles)) + 2 * (len(kept) - 1)
        room = budget_chars - overhead
        if room >= MIN_EXCERPT_CHARS * len(kept) or len(kept) == 1:
            return [ShownPassage(p.label, t, text, text != p.text)
                    for p, t, text in zip(kept, titles, _share(kept, query, max(0, room)))]
        kept.pop()
    return []


def _share(passages: Sequence[Passage], query: str, room: int) -> list[str]:
    """Equal shares of `room`; what a shorter passage leaves goes to the longer ones."""
    shares = [0] * len(passages)
    order = sorted(range(len(passages)), key=lambda i: len(passages[i].text))
    left = room
    for n, i in enumerate(order):
        shares[i] = min(len(passages[i].text), left // (len(order) - n))
        left -= shares[i]
    return [excerpt(p.text, query, share) for p, share in zip(passages, shares)]


__all__ = ["CHARS_PER_TOKEN", "ShownPassage", "estimate_tokens", "excerpt", "fit_passages",
           "passage_chars_available", "sentence_spans"]
