"""Typed provider outcomes (RET-6): a failing provider is never an empty success.

Every external engine (embeddings, rerank, LLM, entailment, series, sources) raises one of the
`ProviderError` subclasses below, and every call can be summarised as a `ProviderOutcome` for the
evidence snapshot and the audit log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

OutcomeKind = Literal["ok", "timeout", "rate_limited", "auth", "unavailable", "bad_response", "degraded"]


class ProviderError(RuntimeError):
    kind: OutcomeKind = "unavailable"

    def __init__(self, provider: str, detail: str, *, status: int | None = None, attempts: int = 1):
        super().__init__(f"{provider}: {self.kind}: {detail}")
        self.provider = provider
        self.detail = detail
        self.status = status
        self.attempts = attempts


class ProviderTimeout(ProviderError):
    kind = "timeout"


class ProviderRateLimited(ProviderError):
    kind = "rate_limited"


class ProviderAuthError(ProviderError):
    kind = "auth"


class ProviderUnavailable(ProviderError):
    kind = "unavailable"


class ProviderBadResponse(ProviderError):
    kind = "bad_response"


def error_for_status(provider: str, status: int, detail: str, *, attempts: int = 1) -> ProviderError:
    """Map an HTTP status to the typed error a caller can act on."""
    if status in (401, 403):
        cls: type[ProviderError] = ProviderAuthError
    elif status == 429:
        cls = ProviderRateLimited
    elif status in (408, 504):
        cls = ProviderTimeout
    elif status >= 500:
        cls = ProviderUnavailable
    else:
        cls = ProviderBadResponse
    return cls(provider, detail, status=status, attempts=attempts)


@dataclass
class ProviderOutcome:
    provider: str
    stage: str
    kind: OutcomeKind = "ok"
    latency_ms: float = 0.0
    attempts: int = 1
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def observed(provider: str, stage: str) -> Iterator[ProviderOutcome]:
    """Time a provider call and record its typed outcome; re-raises the provider's error."""
    outcome = ProviderOutcome(provider=provider, stage=stage)
    start = time.perf_counter()
    try:
        yield outcome
    except ProviderError as exc:
        outcome.kind = exc.kind
        outcome.detail = exc.detail
        outcome.attempts = exc.attempts
        raise
    finally:
        outcome.latency_ms = (time.perf_counter() - start) * 1000.0


def retry_call(fn: Callable[[], Any], *, retry_on: tuple[type[ProviderError], ...], attempts: int,
               sleep: Callable[[float], None] = time.sleep, base_delay: float = 0.5) -> Any:
    """Call `fn`, retrying typed transient errors with exponential back-off; the last error is raised
    with the number of attempts made."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except retry_on as exc:
            if attempt == attempts:
                exc.attempts = attempt
                raise
            sleep(base_delay * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
