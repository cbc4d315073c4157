"""Cohere Rerank (`rerank-v3.5`) through the `cohere` SDK's ClientV2.

Retries are ours (`retry_call`: honours Retry-After, counts attempts); the SDK is called with
`max_retries=0`. `base_url` points the SDK at another endpoint (a proxy, or a local test server).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import cohere
import httpx
from cohere.core.api_error import ApiError

from forum_atlas.providers import (
    ProviderBadResponse,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_exception,
    retry_call,
)
from forum_atlas.rerank.base import RerankerSetupError

DEFAULT_MODEL = "rerank-v3.5"
TRANSIENT = (ProviderRateLimited, ProviderUnavailable, ProviderTimeout)


class CohereReranker:
    engine = "cohere-rerank-api"
    provider = "cohere"

    def __init__(self, model: str = DEFAULT_MODEL, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = 30.0, max_retries: int = 3, retry_base_delay: float = 1.0):
        key = api_key or os.environ.get("COHERE_API_KEY") or os.environ.get("CO_API_KEY")
        if not key:
            raise RerankerSetupError("cohere: no API key: set COHERE_API_KEY (or use --reranker none/flashrank)")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.name = f"cohere/{model}"
        self.version = f"{model}; cohere {cohere.__version__}"
        self._client = cohere.ClientV2(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self._attempts = max_retries + 1
        self._retry_base_delay = retry_base_delay
        self.last_attempts = 0

    def rerank(self, query: str, passages: Sequence[str]) -> list[tuple[int, float]]:
        if not passages:
            return []
        self.last_attempts = 0

        def once() -> list[tuple[int, float]]:
            self.last_attempts += 1
            try:
                response = self._client.rerank(model=self.model, query=query, documents=list(passages),
                                               top_n=len(passages))
            except ApiError as exc:
                raise error_for_exception(self.provider, exc, status=exc.status_code, headers=exc.headers,
                                          timeouts=(), connection_errors=()) from exc
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                raise error_for_exception(self.provider, exc, status=None, headers=None,
                                          timeouts=(httpx.TimeoutException,),
                                          connection_errors=(httpx.TransportError,)) from exc
            except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a malformed 200
                raise error_for_exception(self.provider, exc, status=None, headers=None, timeouts=(),
                                          connection_errors=()) from exc
            ranked = [(int(r.index), float(r.relevance_score)) for r in response.results]
            if sorted(i for i, _ in ranked) != list(range(len(passages))):
                raise ProviderBadResponse(self.provider, f"expected a score for each of {len(passages)} passages, "
                                          f"got indices {sorted(i for i, _ in ranked)}")
            return sorted(ranked, key=lambda r: -r[1])

        return retry_call(once, retry_on=TRANSIENT, attempts=self._attempts, base_delay=self._retry_base_delay)
