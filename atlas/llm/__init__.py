"""LLM engines behind two interfaces: forecast drivers (`make_driver_engine`) and deliberation
(`make_deliberation_engine`), each picked by name.

| name | driver engine | deliberation engine | needs |
|---|---|---|---|
| offline | deterministic content-word rule (default) | extractive: sentences copied from passages (default) | nothing |
| openai | any OpenAI-compatible chat endpoint via the `openai` SDK | the same endpoint, JSON claims validated field by field | OPENAI_API_KEY (+ OPENAI_BASE_URL) |
"""

from __future__ import annotations

from forum_atlas.deliberation.engine import DeliberationEngine
from forum_atlas.llm.base import DriverEngine
from forum_atlas.llm.offline import OfflineDriverEngine
from forum_atlas.llm.offline_deliberation import OfflineDeliberationEngine


def make_driver_engine(name: str = "offline", **options: object) -> DriverEngine:
    if name == "offline":
        return OfflineDriverEngine()
    if name == "openai":
        from forum_atlas.llm.openai_engine import OpenAIDriverEngine

        return OpenAIDriverEngine(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown LLM engine {name!r}: choose offline or openai")


def make_deliberation_engine(name: str = "offline", **options: object) -> DeliberationEngine:
    """`options` go to the OpenAI engine: model, api_key, base_url, options (LLMOptions)."""
    if name == "offline":
        return OfflineDeliberationEngine()
    if name == "openai":
        from forum_atlas.llm.openai_deliberation import OpenAIDeliberationEngine

        return OpenAIDeliberationEngine(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown LLM engine {name!r}: choose offline or openai")


__all__ = ["DriverEngine", "OfflineDeliberationEngine", "OfflineDriverEngine",
           "make_deliberation_engine", "make_driver_engine"]
