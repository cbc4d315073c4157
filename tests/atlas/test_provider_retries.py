"""retry_call and Retry-After handling in forum_atlas.providers (server-directed waits, caps, counts)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from forum_atlas.providers import (
    ProviderAuthError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_exception,
    parse_retry_after,
    retry_call,
)

TRANSIENT = (ProviderRateLimited, ProviderUnavailable)


def scripted(*outcomes):
    """A callable that raises or returns the given outcomes in turn, counting calls."""
    calls = []

    def fn():
        calls.append(1)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return fn, calls


def test_retry_after_replaces_the_backoff():
    sleeps: list[float] = []
    fn, calls = scripted(ProviderRateLimited("p", "slow", retry_after=2.5), ProviderUnavailable("p", "down"), "ok")
    assert retry_call(fn, retry_on=TRANSIENT, attempts=5, sleep=sleeps.append, base_delay=0.1) == "ok"
    assert sleeps == [2.5, 0.2] and len(calls) == 3


def test_backoff_is_capped_and_last_error_carries_attempts():
    sleeps: list[float] = []
    fn, _ = scripted(*[ProviderUnavailable("p", "down")] * 6)
    with pytest.raises(ProviderUnavailable) as caught:
        retry_call(fn, retry_on=TRANSIENT, attempts=6, sleep=sleeps.append, base_delay=1.0, max_delay=5.0)
    assert sleeps == [1.0, 2.0, 4.0, 5.0, 5.0] and caught.value.attempts == 6


def test_a_wait_beyond_max_delay_ends_retries_at_once():
    fn, calls = scripted(ProviderRateLimited("p", "quota", retry_after=3600), "never")
    with pytest.raises(ProviderRateLimited) as caught:
        retry_call(fn, retry_on=TRANSIENT, attempts=4, sleep=lambda s: None, max_delay=60)
    assert caught.value.attempts == 1 and len(calls) == 1


def test_errors_outside_retry_on_are_raised_at_once():
    fn, calls = scripted(ProviderAuthError("p", "bad key"), "never")
    with pytest.raises(ProviderAuthError):
        retry_call(fn, retry_on=TRANSIENT, attempts=4, sleep=lambda s: None)
    assert len(calls) == 1


def test_parse_retry_after():
    assert parse_retry_after("7") == 7.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after(later) <= 31
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: go now


def test_error_for_exception():
    class SdkTimeout(Exception): ...

    class SdkConnection(Exception): ...

    def typed(exc, status=None, headers=None):
        return error_for_exception("p", exc, status=status, headers=headers, timeouts=(SdkTimeout,),
                                   connection_errors=(SdkConnection,), attempts=2)

    limited = typed(Exception("429"), status=429, headers={"retry-after": "3"})
    assert isinstance(limited, ProviderRateLimited) and limited.retry_after == 3.0 and limited.attempts == 2
    assert isinstance(typed(SdkTimeout("t")), ProviderTimeout)
    assert isinstance(typed(SdkConnection("refused")), ProviderUnavailable)
    garbled = typed(KeyError("data"))
    assert garbled.kind == "bad_response" and "unreadable reply" in garbled.detail
