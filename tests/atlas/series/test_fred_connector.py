"""FredConnector against a scripted local server: API (JSON) and CSV paths, typed errors."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from forum_atlas.providers import ProviderAuthError, ProviderBadResponse, ProviderRateLimited, ProviderUnavailable
from forum_atlas.series.connectors.fred import FredConnector
from tests.support.wire import Reply, WireServer

API = "/fred/series/observations"
CSV = "/graph/fredgraph.csv"
CLOCK = datetime(2026, 3, 10, tzinfo=timezone.utc)


@pytest.fixture
def srv():
    with WireServer() as server:
        yield server


def connector(srv, **options):
    return FredConnector(api_base=srv.url, csv_base=srv.url, clock=lambda: CLOCK, sleep=lambda s: None, **options)


def test_api_json_with_dot_missing(srv):
    srv.queue(API, Reply(200, {"observations": [{"date": "2025-09-01", "value": "4.4"},
                                                {"date": "2025-10-01", "value": "."},
                                                {"date": "2025-11-01", "value": "4.5"}]}))
    vintage = connector(srv, api_key="k").fetch("UNRATE")
    assert vintage.connector == "fred-api" and vintage.fetched_at == CLOCK
    assert vintage.series.missing_dates == [date(2025, 10, 1)]
    assert srv.requests_to(API)[0].method == "GET"


def test_csv_export_without_key(srv):
    srv.queue(CSV, Reply(200, "observation_date,CPIAUCSL\n2025-02-01,319.679\n2025-03-01,319.785\n",
                         headers={"Content-Type": "text/csv"}))
    vintage = connector(srv).fetch("CPIAUCSL")
    assert vintage.connector == "fred-csv" and len(vintage.series.observations) == 2


def test_transient_errors_are_retried_then_typed(srv):
    srv.queue(CSV, Reply(503, {"error": "down"}), Reply(503, {"error": "down"}), Reply(503, {"error": "down"}))
    with pytest.raises(ProviderUnavailable) as info:
        connector(srv).fetch("UNRATE")
    assert info.value.attempts == 3 and len(srv.requests_to(CSV)) == 3


def test_rate_limit_then_success(srv):
    srv.queue(CSV, Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"}),
              Reply(200, "observation_date,UNRATE\n2025-01-01,4.0\n", headers={"Content-Type": "text/csv"}))
    assert len(connector(srv).fetch("UNRATE").series.observations) == 1


def test_auth_and_garbage_are_typed(srv):
    srv.queue(API, Reply(403, {"error_message": "bad key"}))
    with pytest.raises(ProviderAuthError):
        connector(srv, api_key="wrong").fetch("UNRATE")
    srv.queue(CSV, Reply(200, "<html>maintenance</html>", headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderBadResponse, match="not a FRED CSV"):
        connector(srv).fetch("UNRATE")
    srv.queue(CSV, Reply(200, "observation_date,CPIAUCSL\n2025-01-01,1\n", headers={"Content-Type": "text/csv"}))
    with pytest.raises(ProviderBadResponse, match="asked for UNRATE"):
        connector(srv).fetch("UNRATE")
    srv.queue(CSV, Reply(429, {}), Reply(429, {}), Reply(429, {}))
    with pytest.raises(ProviderRateLimited):
        connector(srv).fetch("UNRATE")
