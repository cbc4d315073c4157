"""Typed provider outcomes (RET-6): a failing provider is never an empty success.

Every external engine (embeddings, rerank, LLM, entailment, series, sources) raises one of the
`ProviderError` subclasses below, and every call can be summarised as a `ProviderOutcome` for the
evidence snapshot and the audit log.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

OutcomeKind = Literal["ok", "timeout", "rate_limited", "auth", "unavailable", "bad_response", "degraded"]


class ProviderError(RuntimeError):
    kind: OutcomeKind = "unavailable"

    def __init__(self, provider: str, detail: str, *, status: int | None = None, attempts: int = 1,
                 retry_after: float | None = None):
        super().__init__(f"{provider}: {self.kind}: {detail}")
        self.provider = provider
        self.detail = detail
        self.status = status
        self.attempts = attempts
        self.retry_after = retry_after  # seconds the server asked us to wait (Retry-After), if it said


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


def error_for_status(provider: str, status: int, detail: str, *, attempts: int = 1,
                     retry_after: float | None = None) -> ProviderError:
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
    return cls(provider, detail, status=status, attempts=attempts, retry_after=retry_after)



def error_for_exception(provider: str, exc: BaseException, *, status: int | None,
                        headers: Mapping[str, str] | None, timeouts: tuple[type[BaseException], ...],
                        connection_errors: tuple[type[BaseException], ...], attempts: int = 1) -> ProviderError:
    """Map an SDK's exception to a typed error: by HTTP status when the server answered (keeping
    its Retry-After), otherwise a timeout, an unreachable server, or a reply the SDK could not read."""
    detail = f"{type(exc).__name__}: {exc}"[:500]
    if status is not None:
        retry_after = parse_retry_after(headers.get("retry-after")) if headers is not None else None
        return error_for_status(provider, status, detail, attempts=attempts, retry_after=retry_after)
    if isinstance(exc, timeouts):
        cls: type[ProviderError] = ProviderTimeout
    elif isinstance(exc, connection_errors):
        cls = ProviderUnavailable
    else:
        cls, detail = ProviderBadResponse, f"unreadable reply: {detail}"
    return cls(provider, detail, attempts=attempts)

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


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP-date); None when absent or unreadable."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def retry_call(fn: Callable[[], Any], *, retry_on: tuple[type[ProviderError], ...], attempts: int,
               sleep: Callable[[float], None] = time.sleep, base_delay: float = 0.5,
               max_delay: float = 60.0) -> Any:
    """Call `fn`, retrying typed transient errors with exponential back-off; the last error is raised
    with the number of attempts made.

    Back-off is capped at `max_delay`. A server-directed wait (`ProviderError.retry_after`) replaces
    the back-off; one longer than `max_delay` ends the retries at once, since retrying sooner would
    only be refused again.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except retry_on as exc:
            exc.attempts = attempt
            backoff = min(base_delay * 2 ** (attempt - 1), max_delay)
            delay = backoff if exc.retry_after is None else exc.retry_after
            if attempt == attempts or delay > max_delay:
                raise
            sleep(delay)
    raise AssertionError("unreachable")
