"""FRED over HTTP: the JSON API when an API key is configured, otherwise the public CSV export.

Both answers go through the same parser as files, so a malformed download is refused the same way.
HTTP failures become the typed provider errors (timeout, rate-limited, auth, unavailable, bad
response); transient ones are retried with back-off.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import httpx

from forum_atlas.providers import (
    ProviderBadResponse,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    error_for_status,
    retry_call,
)
from forum_atlas.series.connectors.base import FetchedVintage
from forum_atlas.series.parsing import SeriesFormatError, parse_fred_csv

FRED_API_BASE = "https://api.stlouisfed.org"
FRED_CSV_BASE = "https://fred.stlouisfed.org"
PROVIDER = "fred"


class FredConnector:
    def __init__(self, *, api_key: str | None = None, api_base: str = FRED_API_BASE, csv_base: str = FRED_CSV_BASE,
                 timeout_s: float = 20.0, attempts: int = 3, clock: Callable[[], datetime] | None = None,
                 sleep: Callable[[float], None] | None = None):
        self.api_key = api_key
        self.api_base = api_base.rstrip("/")
        self.csv_base = csv_base.rstrip("/")
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.sleep = sleep
        self.name = "fred-api" if api_key else "fred-csv"

    def _get(self, url: str, params: dict[str, str]) -> httpx.Response:
        try:
            response = httpx.get(url, params=params, timeout=self.timeout_s)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(PROVIDER, f"{url}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(PROVIDER, f"{url}: {exc}") from exc
        if response.status_code != 200:
            raise error_for_status(PROVIDER, response.status_code, f"{url}: {response.text[:200]}")
        return response

    def _retrying(self, url: str, params: dict[str, str]) -> httpx.Response:
        extra = {"sleep": self.sleep} if self.sleep else {}
        return retry_call(lambda: self._get(url, params), attempts=self.attempts,
                          retry_on=(ProviderTimeout, ProviderRateLimited, ProviderUnavailable), **extra)

    def _csv_from_api(self, series_id: str, payload: object) -> str:
        if not isinstance(payload, dict) or not isinstance(payload.get("observations"), list):
            raise ProviderBadResponse(PROVIDER, f"{series_id}: JSON answer has no 'observations' list")
        lines = [f"DATE,{series_id}"]
        for item in payload["observations"]:
            if not isinstance(item, dict) or "date" not in item or "value" not in item:
                raise ProviderBadResponse(PROVIDER, f"{series_id}: observation without date/value: {item!r}")
            lines.append(f"{item['date']},{item['value']}")
        return "\n".join(lines) + "\n"

    def fetch(self, series_id: str) -> FetchedVintage:
        fetched_at = self.clock()
        if self.api_key:
            url = f"{self.api_base}/fred/series/observations"
            response = self._retrying(url, {"series_id": series_id, "api_key": self.api_key, "file_type": "json"})
            try:
                text = self._csv_from_api(series_id, response.json())
            except ValueError as exc:
                raise ProviderBadResponse(PROVIDER, f"{url}: not JSON: {exc}") from exc
            origin = f"{url}?series_id={series_id}"
        else:
            url = f"{self.csv_base}/graph/fredgraph.csv"
            text = self._retrying(url, {"id": series_id}).text
            origin = f"{url}?id={series_id}"
        try:
            parsed = parse_fred_csv(text, source=origin)
        except SeriesFormatError as exc:
            raise ProviderBadResponse(PROVIDER, str(exc)) from exc
        if parsed.series_id != series_id:
            raise ProviderBadResponse(PROVIDER, f"asked for {series_id}, the answer holds {parsed.series_id}")
        return FetchedVintage(parsed, fetched_at.strftime("%Y-%m-%d"), fetched_at, self.name, origin)
