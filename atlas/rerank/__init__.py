"""Rerankers behind one interface (RET-4); `make_reranker` picks one by name.

| name | engine | needs |
|---|---|---|
| none | keeps the fused order (default) | nothing |
| flashrank | local ONNX cross-encoder (ms-marco-MiniLM-L-12-v2 by default) | a model folder: ATLAS_RERANKER_MODEL_DIR |
| cohere | Cohere Rerank v3.5 through the `cohere` SDK | COHERE_API_KEY |
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forum_atlas.rerank.base import Reranker, RerankerSetupError
from forum_atlas.rerank.none import NoReranker


def make_reranker(name: str, *, model_dir: Path | str | None = None, **options: Any) -> Reranker:
    if name == "none":
        return NoReranker()
    if name == "flashrank":
        from forum_atlas.rerank.flashrank import FlashRankReranker

        return FlashRankReranker(model_dir, **options)
    if name == "cohere":
        from forum_atlas.rerank.cohere import CohereReranker

        return CohereReranker(**options)
    raise ValueError(f"unknown reranker {name!r}: choose none, flashrank or cohere")


__all__ = ["NoReranker", "Reranker", "RerankerSetupError", "make_reranker"]
