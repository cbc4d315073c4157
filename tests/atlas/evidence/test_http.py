"""The shared HTTP client: typed failures, retries with back-off, Retry-After, timeout, rate limit."""

from __future__ import annotations

import time

import pytest

from forum_atlas.evidence.connectors.http import RateLimiter, SourceHttp
from forum_atlas.providers import ProviderAuthError, ProviderRateLimited, ProviderTimeout, ProviderUnavailable
from tests.support.wire import Reply, WireServer


def client(wire: WireServer, sleeps: list[float], **kwargs) -> SourceHttp:
    options = {"timeout_s": 2.0, "rate_per_s": 100.0, "attempts": 3, "base_delay_s": 0.5, **kwargs}
    return SourceHttp("test-source", wire.url, sleep=sleeps.append, **options)


def test_429_with_retry_after_is_retried_after_the_asked_wait_then_typed_rate_limited(wire, sleeps):
    wire.queue("/search", *[Reply(429, {"error": "API rate limit exceeded"}, {"Retry-After": "2"})] * 3)
    with pytest.raises(ProviderRateLimited) as caught:
        client(wire, sleeps).get("/search", {"q": "x"})
    assert len(wire.requests_to("/search")) == 3
    assert sleeps == [2.0, 2.0]                # the server's Retry-After, not the 0.5 s / 1 s back-off
    assert caught.value.attempts == 3 and caught.value.retry_after == 2.0


def test_429_then_success_returns_the_answer(wire, sleeps):
    wire.queue("/search", Reply(429, {}, {"Retry-After": "1"}), Reply(200, {"hits": 1}))
    response = client(wire, sleeps).get("/search")
    assert response.json() == {"hits": 1} and sleeps == [1.0]


def test_retry_after_beyond_the_source_budget_stops_at_once(wire, sleeps):
    wire.queue("/search", Reply(429, {}, {"Retry-After": "3600"}))
    with pytest.raises(ProviderRateLimited):
        client(wire, sleeps, max_delay_s=10.0).get("/search")
    assert len(wire.requests_to("/search")) == 1 and sleeps == []


def test_server_errors_back_off_exponentially_and_end_unavailable(wire, sleeps):
    wire.always("/search", Reply(503, "down", {"Content-Type": "text/plain"}))
    with pytest.raises(ProviderUnavailable):
        client(wire, sleeps).get("/search")
    assert sleeps == [0.5, 1.0] and len(wire.requests_to("/search")) == 3


def test_auth_errors_are_not_retried(wire, sleeps):
    wire.always("/search", Reply(403, {"error": "forbidden"}))
    with pytest.raises(ProviderAuthError):
        client(wire, sleeps).get("/search")
    assert len(wire.requests_to("/search")) == 1


def test_a_slow_answer_is_a_timeout(wire, sleeps):
    wire.always("/slow", Reply(200, {}, delay_s=1.5))
    started = time.perf_counter()
    with pytest.raises(ProviderTimeout):
        client(wire, sleeps, timeout_s=0.3, attempts=1).get("/slow")
    assert time.perf_counter() - started < 1.2


def test_rate_limiter_spaces_request_starts():
    limiter = RateLimiter(20.0)
    started = time.perf_counter()
    for _ in range(5):
        limiter.wait()
    assert 0.18 <= time.perf_counter() - started < 0.6   # 4 intervals of 50 ms


def test_every_request_is_logged_as_sent(wire, sleeps):
    wire.always("/search", Reply(200, {}))
    http = client(wire, sleeps)
    http.get("/search", {"term": "aspirin stroke"})
    assert http.sent == [f"GET {wire.url}/search?term=aspirin+stroke"]
