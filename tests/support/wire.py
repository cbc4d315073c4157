"""A scripted local HTTP server that speaks a provider's wire format to its real SDK.

Tests queue responses (status, JSON body, headers) per path; the server replays them in order and
records every request it received, so retries, error mapping and payloads are exercised for real.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Received], Reply]


class WireServer:
    """`with WireServer() as srv: srv.queue('/v1/embeddings', Reply(...)); srv.url`"""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Reply | Responder]] = defaultdict(deque)
        self._default: dict[str, Reply | Responder] = {}
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?", 1)[0]
                received = Received(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
                reply = server._next(received)
                if reply.delay_s:
                    threading.Event().wait(reply.delay_s)
                payload = reply.body if isinstance(reply.body, (bytes, str)) else json.dumps(reply.body)
                data = payload.encode("utf-8") if isinstance(payload, str) else payload
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def queue(self, path: str, *replies: Reply | Responder) -> None:
        with self._lock:
            self._queues[path].extend(replies)

    def always(self, path: str, reply: Reply | Responder) -> None:
        with self._lock:
            self._default[path] = reply

    def requests_to(self, path: str) -> list[Received]:
        return [r for r in self.requests if r.path == path]

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            queue = self._queues.get(received.path)
            item = queue.popleft() if queue else self._default.get(received.path)
        if item is None:
            return Reply(404, {"error": f"no scripted reply for {received.method} {received.path}"})
        return item(received) if callable(item) else item

    def __enter__(self) -> "WireServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
