"""Driver decomposition by any OpenAI-compatible chat endpoint, through the `openai` SDK.

The SDK's own retries (which honour Retry-After) handle transient failures; whatever still fails
is mapped to the typed provider errors. The answer must be a JSON object with a `drivers` list.
"""

from __future__ import annotations

import json

from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.llm.base import drivers_from_payload
from forum_atlas.providers import (
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_status,
)

PROVIDER = "openai-llm"
SYSTEM_PROMPT = (
    "You decompose a forecasting question into independent driver hypotheses. Answer with one JSON object: "
    '{"drivers": [{"name": str, "hypothesis": str, "effect": number, "effect_sd": number, "weight": number, '
    '"rationale": str}]}. effect is the shift of the event\'s log-odds if the hypothesis holds (positive makes '
    "the event more likely), effect_sd its uncertainty (>= 0), weight in [0, 1] how much it counts. "
    "At most 8 drivers. No prose outside the JSON."
)


class OpenAIDriverEngine:
    version = "chat-json-v1"

    def __init__(self, *, model: str = "gpt-4o-mini", api_key: str | None = None, base_url: str | None = None,
                 timeout_s: float = 30.0, max_retries: int = 2):
        from openai import OpenAI

        self.model = model
        self.name = f"openai:{model}"
        self.client = OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries)
        self.max_retries = max_retries

    def _typed(self, exc: Exception) -> ProviderError:
        import openai

        attempts = self.max_retries + 1
        if isinstance(exc, openai.APITimeoutError):
            return ProviderTimeout(PROVIDER, str(exc), attempts=attempts)
        if isinstance(exc, openai.APIConnectionError):
            return ProviderUnavailable(PROVIDER, str(exc), attempts=attempts)
        if isinstance(exc, openai.RateLimitError):
            return ProviderRateLimited(PROVIDER, str(exc), status=429, attempts=attempts)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return ProviderAuthError(PROVIDER, str(exc), status=exc.status_code, attempts=attempts)
        if isinstance(exc, openai.APIStatusError):
            return error_for_status(PROVIDER, exc.status_code, str(exc), attempts=attempts)
        return ProviderBadResponse(PROVIDER, f"{type(exc).__name__}: {exc}", attempts=attempts)

    def propose_drivers(self, question: str, *, base_rate: float) -> list[Driver]:
        import openai

        try:
            completion = self.client.chat.completions.create(
                model=self.model,
                temperature=0,
                response_format={"type": "json_object"},
                messages=[{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": f"Question: {question}\nBase rate: {base_rate:.4f}"}],
            )
        except openai.OpenAIError as exc:
            raise self._typed(exc) from exc
        try:
            content = completion.choices[0].message.content or ""
            payload = json.loads(content)
        except (IndexError, AttributeError, ValueError) as exc:
            raise ProviderBadResponse(PROVIDER, f"answer is not a JSON object: {exc}") from exc
        return drivers_from_payload(PROVIDER, payload)
