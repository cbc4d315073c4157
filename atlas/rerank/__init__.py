"""Rerankers behind one interface (RET-4); `make_reranker` picks one by name.

| name | engine | needs |
|---|---|---|
| none | keeps the fused order (default) | nothing |
| flashrank | local ONNX cross-encoder (ms-marco-MiniLM-L-12-v2 by default) | a model folder: ATLAS_RERANKER_MODEL_DIR |
| cohere | Cohere Rerank v3.5 through the `cohere` SDK | COHERE_API_KEY |
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from forum_atlas.config import Settings
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


_shared: dict[tuple[str, str], Reranker] = {}
_lock = threading.Lock()


def reranker_for(settings: Settings) -> Reranker:
    """The configured reranker, one per configuration and process (a local model is slow to load)."""
    options = settings.api_keys.for_provider(settings.reranker)
    key = (settings.reranker, str(settings.reranker_model_dir), options.get("api_key"))
    with _lock:
        if key not in _shared:
            _shared[key] = make_reranker(settings.reranker, model_dir=settings.reranker_model_dir, **options)
        return _shared[key]


__all__ = ["NoReranker", "Reranker", "RerankerSetupError", "make_reranker", "reranker_for"]
