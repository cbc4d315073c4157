"""OpenAI embeddings (`text-embedding-3-small`, 1536 d by default) through the `openai` SDK.

Works with any OpenAI-compatible endpoint via `base_url` (or the SDK's OPENAI_BASE_URL). Retries
are the SDK's own (`max_retries`; it honours Retry-After); the attempts it made are read back from
the `x-stainless-retry-count` header it puts on each request.
"""

from __future__ import annotations

from collections.abc import Callable

import openai

from forum_atlas.embeddings.base import InputType, RemoteEmbedder, api_key_from, resolve_dim
from forum_atlas.providers import ProviderBadResponse, ProviderOutcome, error_for_exception

NATIVE_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def _attempts(request: object) -> int:
    headers = getattr(request, "headers", {})
    return int(headers.get("x-stainless-retry-count", 0)) + 1


class OpenAIEmbedder(RemoteEmbedder):
    provider = "openai"
    engine = "openai-api"
    max_items = 2048  # API limit: 2,048 inputs per request
    max_tokens = 300_000  # API limit: 300K tokens summed over a request's inputs

    def __init__(self, model: str = "text-embedding-3-small", *, dim: int | None = None,
                 api_key: str | None = None, base_url: str | None = None, max_retries: int = 4,
                 timeout: float = 60.0, batch_size: int | None = None,
                 on_outcome: Callable[[ProviderOutcome], None] | None = None):
        dim, self._dimensions = resolve_dim(model, dim, NATIVE_DIMS)
        super().__init__(model=model, dim=dim, version=f"{model}; openai {openai.__version__}",
                         batch_size=batch_size, on_outcome=on_outcome)
        self._client = openai.OpenAI(api_key=api_key_from(api_key, "OPENAI_API_KEY", self.provider),
                                     base_url=base_url, max_retries=max_retries, timeout=timeout)

    def _request(self, batch: list[str], input_type: InputType) -> tuple[object, int]:
        # OpenAI embeddings have no query/document distinction: `input_type` only labels the outcome.
        dimensions = openai.omit if self._dimensions is None else self._dimensions
        try:
            raw = self._client.embeddings.with_raw_response.create(input=batch, model=self.model, dimensions=dimensions)
            data = raw.parse().data
        except openai.APIStatusError as exc:
            raise self._typed(exc, status=exc.status_code, headers=exc.response.headers,
                              attempts=_attempts(exc.response.request)) from exc
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise self._typed(exc, status=None, headers=None, attempts=_attempts(exc.request)) from exc
        except (openai.APIResponseValidationError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise self._typed(exc, status=None, headers=None, attempts=1) from exc
        attempts = raw.retries_taken + 1
        try:  # the API may answer out of order; `index` says which input each vector belongs to
            ordered = sorted(data, key=lambda item: item.index)
            if [item.index for item in ordered] != list(range(len(ordered))):
                raise ValueError(f"indexes {[item.index for item in ordered][:10]} are not 0..n-1")
        except (AttributeError, TypeError, ValueError) as exc:
            raise ProviderBadResponse(self.provider, f"reply does not index its vectors ({exc})",
                                      attempts=attempts) from exc
        return [item.embedding for item in ordered], attempts

    def _typed(self, exc: Exception, *, status: int | None, headers: object, attempts: int):
        return error_for_exception(self.provider, exc, status=status, headers=headers,  # type: ignore[arg-type]
                                   timeouts=(openai.APITimeoutError,), connection_errors=(openai.APIConnectionError,),
                                   attempts=attempts)
