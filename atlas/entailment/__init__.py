"""Support verifiers (DEL-8): does a passage support, contradict, or merely give context for a
claim? `make_support_verifier` picks one by name.

| name | verifier | needs |
|---|---|---|
| rules | deterministic polarity and overlap rules; abstains when unsure (default) | nothing |
| openai | an OpenAI-compatible chat model; may abstain; malformed answers never count as support | OPENAI_API_KEY |
"""

from __future__ import annotations

from forum_atlas.entailment.base import SupportJudgement, SupportQuery, SupportVerifier
from forum_atlas.entailment.rules import RuleBasedSupportVerifier


def make_support_verifier(name: str = "rules", **options: object) -> SupportVerifier:
    """`options` go to the OpenAI verifier: model, api_key, base_url, timeout_s, max_retries."""
    if name == "rules":
        return RuleBasedSupportVerifier()
    if name == "openai":
        from forum_atlas.entailment.openai_verifier import OpenAISupportVerifier

        return OpenAISupportVerifier(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown support verifier {name!r}: choose rules or openai")


__all__ = ["RuleBasedSupportVerifier", "SupportJudgement", "SupportQuery", "SupportVerifier", "make_support_verifier"]
