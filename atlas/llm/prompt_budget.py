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

The budget and the excerpts are `forum_atlas.chat.budget`'s (the support verifier fits its passages
with them too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forum_atlas.chat.budget import cut_at_word, excerpt
from forum_atlas.deliberation.model import Passage

MIN_EXCERPT_CHARS = 160     # less than this of a passage is not worth its label
MAX_TITLE_CHARS = 200


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
        titles = [cut_at_word(" ".join(p.title.split()), MAX_TITLE_CHARS) for p in kept]
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


__all__ = ["ShownPassage", "fit_passages"]
