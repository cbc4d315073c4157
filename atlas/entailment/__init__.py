"""Support verifiers (DEL-8): does a passage support, contradict, or merely give context for a
claim? `make_support_verifier` picks one by name.

| name | verifier | needs |
|---|---|---|
| rules | deterministic polarity and overlap rules; abstains when unsure (default) | nothing |
| openai | an OpenAI-compatible chat model; may abstain; malformed answers never count as support | OPENAI_API_KEY |

A verifier is never the drafter (`choose_verifier`): an `openai` verifier whose model and endpoint are
the deliberation engine's would check its own claims, so the rules verifier is used instead and the
brief says why — unless `allow_self_verification` is set, and then the brief says plainly that the
model checked its own claims.
"""

from __future__ import annotations

from dataclasses import dataclass

from forum_atlas.config import Settings
from forum_atlas.entailment.base import SupportJudgement, SupportQuery, SupportVerifier
from forum_atlas.entailment.rules import RuleBasedSupportVerifier


@dataclass(frozen=True)
class VerifierChoice:
    name: str                     # rules | openai
    model: str | None = None      # the openai verifier's model
    base_url: str | None = None   # its endpoint (None: the SDK's default, OPENAI_BASE_URL)
    self_verified: bool = False   # the drafting model checks its own claims (allowed explicitly)
    note: str = ""                # why the configured verifier was not used, or that it checks itself

    def describe(self) -> str:
        """Engine name and version as the brief records it, with the note."""
        if self.name == "openai":
            from forum_atlas.entailment.openai_verifier import PROMPT_VERSION

            engine = f"openai:{self.model} {PROMPT_VERSION}"
        else:
            engine = f"{RuleBasedSupportVerifier.name} {RuleBasedSupportVerifier.version}"
        return f"{engine} ({self.note})" if self.note else engine


def choose_verifier(settings: Settings, drafting_base_url: str | None = None) -> VerifierChoice:
    """The support verifier a run uses. `drafting_base_url`: the deliberation engine's endpoint."""
    if settings.support_verifier != "openai":
        return VerifierChoice(settings.support_verifier)
    model = settings.support_model or settings.llm_model
    base_url = settings.support_base_url or None
    drafts = (settings.llm == "openai" and model == settings.llm_model
              and (base_url is None or base_url.rstrip("/") == (drafting_base_url or "").rstrip("/")))
    if not drafts:
        return VerifierChoice("openai", model, base_url)
    if settings.allow_self_verification:
        return VerifierChoice("openai", model, base_url, self_verified=True,
                              note=f"openai:{model} drafted the claims and checked them itself")
    return VerifierChoice("rules", note=f"openai:{model} was not used as verifier: it drafted the claims "
                                        "(set ATLAS_SUPPORT_MODEL or ATLAS_SUPPORT_BASE_URL to another model)")


def make_support_verifier(name: str = "rules", **options: object) -> SupportVerifier:
    """`options` go to the OpenAI verifier: model, api_key, base_url, options (LLMOptions), batch_size."""
    if name == "rules":
        return RuleBasedSupportVerifier()
    if name == "openai":
        from forum_atlas.entailment.openai_verifier import OpenAISupportVerifier

        return OpenAISupportVerifier(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown support verifier {name!r}: choose rules or openai")


__all__ = ["RuleBasedSupportVerifier", "SupportJudgement", "SupportQuery", "SupportVerifier", "VerifierChoice",
           "choose_verifier", "make_support_verifier"]
