"""Replays the real recorded API responses in ../shared/data/api-fixtures through the WireServer,
with the status and content type the manifest says they were recorded with."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from tests.conftest import SHARED_DATA
from tests.support.wire import Reply

FIXTURES = SHARED_DATA / "api-fixtures"


@cache
def manifest() -> dict[str, dict]:
    return {entry["file"]: entry for entry in json.loads((FIXTURES / "manifest.json").read_text())}


def body(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def recorded(name: str, *, status: int | None = None, headers: dict[str, str] | None = None,
             delay_s: float = 0.0) -> Reply:
    """The fixture as the API sent it: its bytes, its recorded HTTP status and content type."""
    entry = manifest()[name]
    recorded_status = int(entry["status"]) if str(entry["status"]).isdigit() else 200
    # The manifest annotates some types ("application/json (not recorded)", "XML (… not recorded)").
    content_type = str(entry.get("content_type") or "").split(" (")[0].strip()
    if "/" not in content_type:
        content_type = "text/xml" if name.endswith(".xml") else "application/json"
    return Reply(status or recorded_status, body(name), {"Content-Type": content_type, **(headers or {})}, delay_s)


def crossref_message(name: str) -> Reply:
    """A derived (pruned, cache-wrapped) Crossref record served as /works/{doi} serves a work."""
    message = json.loads(body(name))["message"]
    return Reply(200, {"status": "ok", "message-type": "work", "message": message})


def path_of(fixture: str) -> Path:
    return FIXTURES / fixture
