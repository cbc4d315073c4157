"""LLM engines behind one interface; `make_driver_engine` picks one from settings.

| name | engine | needs |
|---|---|---|
| offline | deterministic content-word rule (default) | nothing |
| openai | any OpenAI-compatible chat endpoint via the `openai` SDK | OPENAI_API_KEY (+ OPENAI_BASE_URL) |
"""

from __future__ import annotations

from forum_atlas.llm.base import DriverEngine
from forum_atlas.llm.offline import OfflineDriverEngine


def make_driver_engine(name: str = "offline", **options: object) -> DriverEngine:
    if name == "offline":
        return OfflineDriverEngine()
    if name == "openai":
        from forum_atlas.llm.openai_engine import OpenAIDriverEngine

        return OpenAIDriverEngine(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown LLM engine {name!r}: choose offline or openai")


__all__ = ["DriverEngine", "OfflineDriverEngine", "make_driver_engine"]
