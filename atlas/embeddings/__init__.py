"""Embedding providers behind one interface; `make_embedder` picks one by name.

| name | engine | needs |
|---|---|---|
| hashed | deterministic signed feature hashing of a bag of words (default, offline) | nothing |
| minilm | all-MiniLM-L6-v2 via sentence-transformers, loaded from a local folder/package | `.[local-models]` |
| voyage | Voyage AI `voyage-3` (1024 d) through the `voyageai` SDK | VOYAGE_API_KEY |
| openai | OpenAI embeddings through the `openai` SDK (any compatible endpoint) | OPENAI_API_KEY |
"""

from __future__ import annotations

from atlas.embeddings.base import Embedder
from atlas.embeddings.hashed import HashedEmbedder


def make_embedder(name: str, *, dim: int = 384, **options: object) -> Embedder:
    if name == "hashed":
        return HashedEmbedder(dim=dim)
    if name == "minilm":
        from atlas.embeddings.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(**options)  # type: ignore[arg-type]
    if name == "voyage":
        from atlas.embeddings.voyage import VoyageEmbedder

        return VoyageEmbedder(**options)  # type: ignore[arg-type]
    if name == "openai":
        from atlas.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown embedder {name!r}: choose hashed, minilm, voyage or openai")


__all__ = ["Embedder", "HashedEmbedder", "make_embedder"]
