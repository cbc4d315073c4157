"""Which engines Forum Atlas uses, as a Prefect block. API keys are Secret fields of the block (stored
encrypted, shown masked in the UI); an empty one leaves the provider's own environment variable
(VOYAGE_API_KEY, OPENAI_API_KEY, COHERE_API_KEY)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from forum_atlas.config import EMBEDDER_NAMES, ProviderKeys, Settings
from forum_atlas.redaction import remember_secret


class AtlasProviders(Block):
    _block_type_name = "Forum Atlas Providers"
    _description = "Embedding, rerank and LLM engines; offline defaults need no network and no keys."

    embedder: Literal[EMBEDDER_NAMES] = "onnx-minilm"
    embed_dim: int = Field(default=384, ge=8, le=16000, description="dimension of the hashed embedder")
    reranker: Literal["none", "flashrank", "cohere"] = "none"
    reranker_model_dir: str | None = None
    llm: Literal["offline", "openai"] = "offline"
    llm_model: str = "gpt-4o-mini"
    voyage_api_key: SecretStr | None = Field(default=None, description="for embedder voyage (else VOYAGE_API_KEY)")
    openai_api_key: SecretStr | None = Field(default=None, description="for embedder/llm openai (else OPENAI_API_KEY)")
    cohere_api_key: SecretStr | None = Field(default=None, description="for reranker cohere (else COHERE_API_KEY)")

    def apply(self, settings: Settings) -> Settings:
        def secret(value: SecretStr | None) -> str | None:
            plain = value.get_secret_value() if value else None
            remember_secret(plain)   # whatever this process writes from now on masks it
            return plain

        return settings.with_overrides(
            embedder=self.embedder, embed_dim=self.embed_dim, reranker=self.reranker,
            reranker_model_dir=Path(self.reranker_model_dir) if self.reranker_model_dir else None,
            llm=self.llm, llm_model=self.llm_model,
            api_keys=ProviderKeys(voyage=secret(self.voyage_api_key), openai=secret(self.openai_api_key),
                                  cohere=secret(self.cohere_api_key)),
        )
