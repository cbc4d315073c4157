"""A local stand-in for FRED's public CSV export (`/graph/fredgraph.csv?id=<ID>`), in its wire format.

Each series is a real FRED download extended, month by month, up to two months before today (so a
lane run on any date finds an unpublished next period) — and every answer revises the newest value a
little, as FRED's revisions do, so each fetch is a new vintage. `with standin.outage():` makes it answer 503,
as FRED does when it is down; `publish_next_period()` adds each series' next month, as a new release does.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from forum_atlas.forecasting.lane import shift_months


def extended_csv(download: Path, today: date) -> tuple[str, list[tuple[date, str]]]:
    """The download's header and rows, continued with its last value to the month two months before today."""
    header, *lines = download.read_text(encoding="utf-8").strip().splitlines()
    rows = [(date.fromisoformat(d), v) for d, v in (line.split(",") for line in lines)]
    last_value = next(v for _, v in reversed(rows) if v != ".")
    newest = shift_months(today.replace(day=1), -2)
    while rows[-1][0] < newest:
        rows.append((shift_months(rows[-1][0], 1), last_value))
    return header, rows


class FredCsvStandIn:
    """`with FredCsvStandIn({"UNRATE": path, ...}) as fred: fred.url` — serves each file as its series."""

    def __init__(self, downloads: dict[str, Path], today: date | None = None):
        self.series = {sid: extended_csv(path, today or date.today()) for sid, path in downloads.items()}
        self.requests: Counter[str] = Counter()
        self.down = False
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                series_id = parse_qs(url.query).get("id", [""])[0]
                if url.path != "/graph/fredgraph.csv" or series_id not in standin.series:
                    self.send_error(404)   # FRED answers an unknown id with an HTML error page
                    return
                if standin.down:
                    self.send_error(503)
                    return
                body = standin.answer(series_id).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/csv")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, series_id: str) -> str:
        with self._lock:   # the server answers requests on threads of its own
            self.requests[series_id] += 1
            revision = self.requests[series_id]
        header, rows = self.series[series_id]
        (last_date, last_value), body = rows[-1], rows[:-1]
        revised = f"{float(last_value) + revision / 1000:.3f}"
        lines = [header, *(f"{d.isoformat()},{v}" for d, v in body), f"{last_date.isoformat()},{revised}"]
        return "\n".join(lines) + "\n"

    @contextmanager
    def outage(self) -> Iterator[None]:
        self.down = True
        try:
            yield
        finally:
            self.down = False

    def publish_next_period(self) -> None:
        """Every series gains its next month, at its last value."""
        with self._lock:
            for _, rows in self.series.values():
                rows.append((shift_months(rows[-1][0], 1), rows[-1][1]))

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FredCsvStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
