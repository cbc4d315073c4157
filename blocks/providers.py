"""Which engines Forum Atlas uses, as a Prefect block. API keys stay in the providers' own
environment variables (VOYAGE_API_KEY, OPENAI_API_KEY, CO_API_KEY) or Prefect Secret blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect.blocks.core import Block
from pydantic import Field

from forum_atlas.config import Settings


class AtlasProviders(Block):
    _block_type_name = "Forum Atlas Providers"
    _description = "Embedding, rerank and LLM engines; offline defaults need no network and no keys."

    embedder: Literal["hashed", "minilm", "voyage", "openai"] = "hashed"
    embed_dim: int = Field(default=384, ge=8, le=16000, description="dimension of the hashed embedder")
    reranker: Literal["none", "flashrank", "cohere"] = "none"
    reranker_model_dir: str | None = None
    llm: Literal["offline", "openai"] = "offline"
    llm_model: str = "gpt-4o-mini"

    def apply(self, settings: Settings) -> Settings:
        return settings.with_overrides(
            embedder=self.embedder, embed_dim=self.embed_dim, reranker=self.reranker,
            reranker_model_dir=Path(self.reranker_model_dir) if self.reranker_model_dir else None,
            llm=self.llm, llm_model=self.llm_model,
        )
