"""The one HTTP client every evidence connector uses: per-source timeout, rate limit and retries with
exponential back-off that honours Retry-After; every failure becomes a typed provider error.

Every request it sends is also appended to `sent` (method + full URL + body), the audit trail of
what left the platform (EVB-3) — the tests check it holds no planted personal data.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping

import httpx

from forum_atlas.providers import (
    ProviderBadResponse,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_status,
    parse_retry_after,
    retry_call,
)

USER_AGENT = "forum-atlas/0.1 (evidence router; https://github.com/forum-atlas)"
TRANSIENT = (ProviderTimeout, ProviderRateLimited, ProviderUnavailable)


class LicenceBlocked(ProviderError):
    """The source answered, but the item may not be used (e.g. PMC `idIsNotOpenAccess`)."""

    kind = "licence_blocked"  # type: ignore[assignment]


class RateLimiter:
    """At most `rate_per_s` request starts per second for one source, shared by its threads."""

    def __init__(self, rate_per_s: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.interval = 1.0 / rate_per_s
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)


class SourceHttp:
    def __init__(self, source: str, base_url: str, *, timeout_s: float, rate_per_s: float, attempts: int = 3,
                 base_delay_s: float = 0.5, max_delay_s: float = 30.0, sleep: Callable[[float], None] = time.sleep,
                 headers: Mapping[str, str] | None = None):
        self.source = source
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self._sleep = sleep
        self.limiter = RateLimiter(rate_per_s)   # always real time: the limit protects the real API
        self.sent: list[str] = []
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout_s, follow_redirects=True,
                                    headers={"User-Agent": USER_AGENT, **(headers or {})},
                                    event_hooks={"request": [self._record]})

    def _record(self, request: httpx.Request) -> None:
        body = request.content.decode("utf-8", "replace") if request.content else ""
        self.sent.append(f"{request.method} {request.url} {body}".rstrip())

    def _once(self, method: str, path: str, params: Mapping[str, str] | None, accept: Iterable[int]) -> httpx.Response:
        self.limiter.wait()
        try:
            response = self._client.request(method, path, params=params)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(self.source, f"{path}: no answer within {self.timeout_s:g} s ({exc})") from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(self.source, f"{path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 200 or response.status_code in accept:
            return response
        raise error_for_status(self.source, response.status_code,
                               f"{path}: HTTP {response.status_code}: {response.text[:300]}",
                               retry_after=parse_retry_after(response.headers.get("retry-after")))

    def get(self, path: str, params: Mapping[str, str] | None = None, *, accept: Iterable[int] = ()) -> httpx.Response:
        """GET with retries of transient failures; `accept` lists non-200 statuses the caller interprets
        itself (openFDA answers a zero-hit search with 404)."""
        accepted = tuple(accept)
        return retry_call(lambda: self._once("GET", path, params, accepted), retry_on=TRANSIENT,
                          attempts=self.attempts, sleep=self._sleep, base_delay=self.base_delay_s,
                          max_delay=self.max_delay_s)

    def decode_json(self, response: httpx.Response, where: str) -> object:
        try:
            return response.json()
        except ValueError as exc:
            kind = response.headers.get("content-type", "?")
            raise ProviderBadResponse(self.source, f"{where}: not JSON ({kind}): {response.text[:120]!r}",
                                      status=response.status_code) from exc

    def get_json(self, path: str, params: Mapping[str, str] | None = None, *,
                 accept: Iterable[int] = ()) -> tuple[int, object]:
        response = self.get(path, params, accept=accept)
        return response.status_code, self.decode_json(response, path)

    def close(self) -> None:
        self._client.close()
