"""Driver decomposition by any OpenAI-compatible chat endpoint, through the `openai` SDK.

The client and the mapping of SDK failures to typed provider errors are shared with the other
OpenAI-backed engines (`forum_atlas.chat.openai_client`). The answer must be a JSON object with a
`drivers` list.
"""

from __future__ import annotations

import json

from forum_atlas.chat.openai_client import DEFAULT_MODEL, OpenAIChat
from forum_atlas.config import LLMOptions
from forum_atlas.forecasting.montecarlo import Driver
from forum_atlas.llm.base import drivers_from_payload
from forum_atlas.providers import ProviderBadResponse

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

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None, base_url: str | None = None,
                 options: LLMOptions | None = None):
        self.model = model
        self.name = f"openai:{model}"
        self.chat = OpenAIChat(provider=PROVIDER, model=model, api_key=api_key, base_url=base_url, options=options)

    def propose_drivers(self, question: str, *, base_rate: float) -> list[Driver]:
        result = self.chat.complete_json([
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Question: {question}\nBase rate: {base_rate:.4f}"},
        ])
        try:
            payload = json.loads(result.content or "")
        except ValueError as exc:
            raise ProviderBadResponse(PROVIDER, f"answer is not a JSON object: {exc}",
                                      attempts=result.attempts) from exc
        return drivers_from_payload(PROVIDER, payload)
