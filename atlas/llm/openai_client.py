"""The one place an OpenAI-compatible chat endpoint is called: client construction and the mapping
of the SDK's exceptions to the typed provider errors (RET-6).

Every OpenAI-backed engine (driver decomposition, deliberation, support verification) holds an
`OpenAIChat` and calls `complete_json` (or `recorded`, which adds the call's `CallRecord`: input
digest, sha256 of the exact messages, outcome, latency, attempts); nothing else in the package builds
an `openai.OpenAI` for chat or catches an `openai` exception from one.

- Retries are the SDK's own (`max_retries`; it honours Retry-After). The attempts it made are read
  back from the `x-stainless-retry-count` header it puts on each request, so a 401 (never retried)
  reports 1 attempt and a 429 that exhausted two retries reports 3.
- A server that answered is mapped by its HTTP status (401/403 auth, 429 rate-limited with its
  Retry-After, 408/504 timeout, 5xx unavailable, other 4xx bad response); no answer at all is a
  timeout or an unreachable server; a reply the SDK cannot read is a bad response.
- The API key is given to the SDK only: it is never part of a message, a digest, a log line or an
  error's detail (a server that echoes it back in an error message has it masked).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any

import openai

from forum_atlas.deliberation.model import CallRecord
from forum_atlas.deliberation.model import call_json as canonical_json
from forum_atlas.providers import ProviderAuthError, ProviderError, error_for_exception

DEFAULT_MODEL = "gpt-4o-mini"
KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class ChatResult:
    content: str | None       # the first choice's message content (None when the model sent none)
    finish_reason: str | None
    attempts: int             # requests the SDK made, retries included
    latency_ms: float


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _attempts(request: object) -> int:
    headers = getattr(request, "headers", None) or {}
    try:
        return int(headers.get("x-stainless-retry-count", 0)) + 1
    except (TypeError, ValueError):
        return 1


def typed_openai_error(provider: str, exc: BaseException, *, secret: str | None = None) -> ProviderError:
    """The typed provider error for an exception raised by the `openai` SDK (or while reading its
    reply). `secret` (the API key) is masked out of the detail if the server echoed it."""
    if isinstance(exc, openai.APIStatusError):
        error = error_for_exception(provider, exc, status=exc.status_code, headers=exc.response.headers,
                                    timeouts=(), connection_errors=(), attempts=_attempts(exc.response.request))
    elif isinstance(exc, openai.APIConnectionError):  # APITimeoutError is a subclass
        error = error_for_exception(provider, exc, status=None, headers=None, timeouts=(openai.APITimeoutError,),
                                    connection_errors=(openai.APIConnectionError,),
                                    attempts=_attempts(getattr(exc, "request", None)))
    else:  # APIResponseValidationError, an unreadable body, anything else the SDK raised
        error = error_for_exception(provider, exc, status=None, headers=None, timeouts=(), connection_errors=(),
                                    attempts=1)
    if secret and secret in error.detail:
        error.detail = error.detail.replace(secret, "***")
        error.args = (f"{provider}: {error.kind}: {error.detail}",)
    return error


class OpenAIChat:
    """An OpenAI-compatible chat endpoint in JSON mode. `provider` names the caller in typed errors."""

    def __init__(self, *, provider: str, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, timeout_s: float = 30.0, max_retries: int = 2):
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            raise ProviderAuthError(provider, f"no API key: pass api_key or set {KEY_ENV}")
        self.provider = provider
        self.model = model
        self.max_retries = max_retries
        self._secret = key
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=max_retries)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChat(provider={self.provider!r}, model={self.model!r}, base_url={str(self._client.base_url)!r})"

    def typed(self, exc: BaseException) -> ProviderError:
        return typed_openai_error(self.provider, exc, secret=self._secret)

    def complete_json(self, messages: list[dict[str, Any]], *, temperature: float = 0.0) -> ChatResult:
        """One chat completion with `response_format={"type": "json_object"}`. Raises a typed
        `ProviderError` for anything the provider did wrong; the content is not parsed here."""
        start = time.perf_counter()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.model, temperature=temperature, response_format={"type": "json_object"},
                messages=messages,  # type: ignore[arg-type]
            )
            completion = raw.parse()
            choice = completion.choices[0] if completion.choices else None
            content = choice.message.content if choice is not None and choice.message is not None else None
            finish = choice.finish_reason if choice is not None else None
        except (openai.OpenAIError, AttributeError, TypeError, ValueError, RecursionError) as exc:
            raise self.typed(exc) from exc  # a reply nested too deeply to parse is a bad response, not a crash
        return ChatResult(content=content, finish_reason=finish, attempts=raw.retries_taken + 1,
                          latency_ms=(time.perf_counter() - start) * 1000.0)

    def recorded(self, messages: list[dict[str, Any]], *, stage: str, provider: str, version: str,
                 input_digest: str) -> tuple[ChatResult, CallRecord]:
        """`complete_json` with its audit record (AUD-4): the input digest, the sha256 of the exact
        messages sent, outcome, latency and attempts. On a provider failure the typed error is raised
        with the record of the failed call attached as `error.call`."""
        record = CallRecord(stage=stage, provider=provider, version=version, input_digest=input_digest,
                            prompt_hash=sha256_hex(canonical_json(messages)))
        start = time.perf_counter()
        try:
            result = self.complete_json(messages)
        except ProviderError as exc:
            record.outcome, record.detail, record.attempts = exc.kind, exc.detail[:500], exc.attempts
            record.latency_ms = (time.perf_counter() - start) * 1000.0
            exc.call = record  # type: ignore[attr-defined]
            raise
        record.latency_ms, record.attempts = result.latency_ms, result.attempts
        return result, record
