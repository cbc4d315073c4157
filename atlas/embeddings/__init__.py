"""Embedding providers behind one interface; `make_embedder` picks one by name.

| name | engine | needs |
|---|---|---|
| hashed | deterministic signed feature hashing of a bag of words (default, offline) | nothing |
| minilm | all-MiniLM-L6-v2 (384 d) via sentence-transformers, loaded from a local folder/package | `.[local-models]` |
| voyage | Voyage AI `voyage-3` (1024 d) through the `voyageai` SDK | VOYAGE_API_KEY |
| openai | OpenAI `text-embedding-3-small` (1536 d) through the `openai` SDK (any compatible endpoint) | OPENAI_API_KEY |
"""

from __future__ import annotations

from typing import Any

from atlas.embeddings.base import Embedder, EmbedderSetupError
from atlas.embeddings.hashed import HashedEmbedder


def make_embedder(name: str, *, dim: int | None = None, **options: Any) -> Embedder:
    """Build the embedder called `name`; `options` go to its constructor (unknown ones are a TypeError).

    `dim` is the hashed embedder's width (default 384); for the others it is optional and must match
    the model (or, for OpenAI text-embedding-3 and flexible Voyage models, asks for shorter vectors):
    voyage: model, api_key, base_url, max_retries, retry_base_delay, timeout, batch_size, on_outcome;
    openai: model, api_key, base_url, max_retries, timeout, batch_size, on_outcome;
    minilm: model_path, model_name, batch_size, device.
    """
    if name == "hashed":
        return HashedEmbedder(dim=384 if dim is None else dim, **options)
    if name == "minilm":
        from atlas.embeddings.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(dim=dim, **options)
    if name == "voyage":
        from atlas.embeddings.voyage import VoyageEmbedder

        return VoyageEmbedder(dim=dim, **options)
    if name == "openai":
        from atlas.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(dim=dim, **options)
    raise ValueError(f"unknown embedder {name!r}: choose hashed, minilm, voyage or openai")


__all__ = ["Embedder", "EmbedderSetupError", "HashedEmbedder", "make_embedder"]
