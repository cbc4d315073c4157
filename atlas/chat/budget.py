"""What of a model's context a prompt's passages may use, and a long passage shown within its share.

A model's context (`LLMOptions.context_tokens`, the server's n_ctx) holds the prompt and the answer
(`max_tokens`); `passage_chars_available` is what is left for passages beside the fixed part of the
prompt. A passage longer than its share is not cut blind at its end (`excerpt`): its sentences are
ranked by the content words they share with the query, the best ones are kept up to the share, and
they are shown in their original order, with `[…]` where sentences were left out, so a quote copied
from what is shown is still verbatim in the whole passage.

Tokens are estimated from characters (`CHARS_PER_TOKEN`, on the low side for English text with the
BPE vocabularies of GPT-4o, Llama 3 or Qwen 2.5, so an estimate errs towards a shorter prompt).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from forum_atlas.text import stems

CHARS_PER_TOKEN = 3.2
SAFETY_TOKENS = 64          # chat template tokens around each message, and the estimate's error
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


def cut_at_word(text: str, max_chars: int) -> str:
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
        return cut_at_word(text[start:end], max_chars)
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


__all__ = ["CHARS_PER_TOKEN", "GAP", "cut_at_word", "estimate_tokens", "excerpt", "passage_chars_available",
           "sentence_spans"]
