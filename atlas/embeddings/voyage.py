"""Voyage AI embeddings (`voyage-3`, 1024 d by default) through the `voyageai` SDK.

Retries are ours, not the SDK's: its tenacity loop waits 1-16 s regardless of Retry-After, does
not retry a 500, and cannot report how many attempts it made. The SDK is therefore called with
`max_retries=0` (one attempt) inside `retry_call`, which honours Retry-After and counts attempts.
"""

from __future__ import annotations

from collections.abc import Callable

import voyageai
import voyageai.error as voyage_errors

from forum_atlas.embeddings.base import InputType, RemoteEmbedder, api_key_from, resolve_dim
from forum_atlas.providers import (
    ProviderOutcome,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_exception,
    retry_call,
)

NATIVE_DIMS = {
    "voyage-3": 1024, "voyage-3-lite": 512, "voyage-3-large": 1024, "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024, "voyage-code-3": 1024, "voyage-finance-2": 1024, "voyage-law-2": 1024,
}
TRANSIENT = (ProviderRateLimited, ProviderUnavailable, ProviderTimeout)


class VoyageEmbedder(RemoteEmbedder):
    provider = "voyage"
    engine = "voyage-api"
    max_items = 1000  # API limit: 1,000 texts per request
    max_tokens = 120_000  # API limit per request is 120K-1M tokens by model; the smallest fits all

    def __init__(self, model: str = "voyage-3", *, dim: int | None = None, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 4, retry_base_delay: float = 1.0,
                 timeout: float = 60.0, batch_size: int | None = None,
                 on_outcome: Callable[[ProviderOutcome], None] | None = None):
        dim, self._output_dimension = resolve_dim(model, dim, NATIVE_DIMS)
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        super().__init__(model=model, dim=dim, version=f"{model}; voyageai {voyageai.__version__}",
                         batch_size=batch_size, on_outcome=on_outcome)
        self._client = voyageai.Client(api_key=api_key_from(api_key, "VOYAGE_API_KEY", self.provider),
                                       max_retries=0, timeout=timeout, base_url=base_url)
        self._attempts = max_retries + 1
        self._retry_base_delay = retry_base_delay

    def _request(self, batch: list[str], input_type: InputType) -> tuple[object, int]:
        attempts = 0

        def once() -> object:
            nonlocal attempts
            attempts += 1
            try:
                return self._client.embed(batch, model=self.model, input_type=input_type,
                                          output_dimension=self._output_dimension).embeddings
            except voyage_errors.VoyageError as exc:
                raise error_for_exception(
                    self.provider, exc, status=exc.http_status, headers=exc.headers,
                    timeouts=(voyage_errors.Timeout,), connection_errors=(voyage_errors.APIConnectionError,),
                ) from exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:  # the SDK's reading of a malformed 200
                raise error_for_exception(self.provider, exc, status=None, headers=None, timeouts=(),
                                          connection_errors=()) from exc

        vectors = retry_call(once, retry_on=TRANSIENT, attempts=self._attempts, base_delay=self._retry_base_delay)
        return vectors, attempts
