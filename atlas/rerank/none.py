"""No reranking: the fused order is the final order (scores are 1/rank so they stay comparable)."""

from __future__ import annotations

from collections.abc import Sequence


class NoReranker:
    name = "none"
    engine = "none"
    version = "1"

    def rerank(self, query: str, passages: Sequence[str]) -> list[tuple[int, float]]:
        return [(i, 1.0 / (i + 1)) for i in range(len(passages))]
