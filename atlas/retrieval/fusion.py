"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, 2009) — RET-3.

    score(d) = sum over the lists that contain d of 1 / (k + rank(d))

Ranks are 1-based (the best item of a list has rank 1), so with the default k = 50 a list's top item
contributes 1/51. An item missing from a list contributes nothing for it. Ties in the fused score are
broken by the best single-list rank, then by chunk id, so the order is fully deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from forum_atlas.retrieval.model import Candidate

DEFAULT_RRF_K = 50


def reciprocal_rank_fusion(lists: Mapping[str, Sequence[Candidate]], k: int = DEFAULT_RRF_K) -> list[Candidate]:
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for candidates in lists.values():
        for candidate in candidates:
            if candidate.rank < 1:
                raise ValueError(f"ranks are 1-based; chunk {candidate.chunk_id} has rank {candidate.rank}")
            scores[candidate.chunk_id] = scores.get(candidate.chunk_id, 0.0) + 1.0 / (k + candidate.rank)
            best_rank[candidate.chunk_id] = min(best_rank.get(candidate.chunk_id, candidate.rank), candidate.rank)
    order = sorted(scores, key=lambda c: (-scores[c], best_rank[c], c))
    return [Candidate(chunk_id=c, rank=i, score=scores[c]) for i, c in enumerate(order, start=1)]
