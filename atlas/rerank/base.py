"""The reranking interface every provider implements (RET-4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


class RerankerSetupError(RuntimeError):
    """The reranker cannot be built as configured (missing model folder, package or API key);
    the message names the fix."""


@runtime_checkable
class Reranker(Protocol):
    """Scores passages against a query with a cross-encoder.

    `rerank` returns (index into `passages`, relevance score) for every passage, best first. It
    raises a typed `atlas.providers.ProviderError` when the engine fails; the retrieval pipeline then
    keeps the fused order and marks the stage degraded.
    """

    name: str
    engine: str
    version: str

    def rerank(self, query: str, passages: Sequence[str]) -> list[tuple[int, float]]: ...
