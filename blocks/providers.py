"""Which engines Forum Atlas uses, as a Prefect block. API keys are Secret fields of the block (stored
encrypted, shown masked in the UI); an empty one leaves the provider's own environment variable
(VOYAGE_API_KEY, OPENAI_API_KEY, COHERE_API_KEY)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from forum_atlas.config import EMBEDDER_NAMES, LLMOptions, ProviderKeys, Settings
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
    # How the LLM endpoint is called; empty = ATLAS_LLM_* from the environment, else the hosted-API default
    # (docs/configuration.md; a local CPU server's profile: docs/local-llm.md).
    llm_timeout_s: float | None = Field(default=None, gt=0, le=86400, description="seconds to wait for one answer")
    llm_retries: int | None = Field(default=None, ge=0, le=10,
                                    description="re-sends after a refusal (429, 5xx, no connection); never after a timeout")
    llm_max_tokens: int | None = Field(default=None, ge=16, description="answer length cap, in tokens")
    llm_temperature: float | None = Field(default=None, ge=0, le=2)
    llm_concurrency: int | None = Field(default=None, ge=1, le=256, description="requests in flight per endpoint")
    llm_context_tokens: int | None = Field(default=None, ge=272,
                                           description="the model's context window (the server's n_ctx)")
    voyage_api_key: SecretStr | None = Field(default=None, description="for embedder voyage (else VOYAGE_API_KEY)")
    openai_api_key: SecretStr | None = Field(default=None, description="for embedder/llm openai (else OPENAI_API_KEY)")
    cohere_api_key: SecretStr | None = Field(default=None, description="for reranker cohere (else COHERE_API_KEY)")

    def llm_options(self, settings: Settings) -> LLMOptions:
        given = {"timeout_s": self.llm_timeout_s, "retries": self.llm_retries, "max_tokens": self.llm_max_tokens,
                 "temperature": self.llm_temperature, "concurrency": self.llm_concurrency,
                 "context_tokens": self.llm_context_tokens}
        return replace(settings.llm_options, **{k: v for k, v in given.items() if v is not None})

    def apply(self, settings: Settings) -> Settings:
        def secret(value: SecretStr | None) -> str | None:
            plain = value.get_secret_value() if value else None
            remember_secret(plain)   # whatever this process writes from now on masks it
            return plain

        return settings.with_overrides(
            embedder=self.embedder, embed_dim=self.embed_dim, reranker=self.reranker,
            reranker_model_dir=Path(self.reranker_model_dir) if self.reranker_model_dir else None,
            llm=self.llm, llm_model=self.llm_model, llm_options=self.llm_options(settings),
            api_keys=ProviderKeys(voyage=secret(self.voyage_api_key), openai=secret(self.openai_api_key),
                                  cohere=secret(self.cohere_api_key)),
        )
