from __future__ import annotations

import pytest

from forum_atlas.evidence.registry import build_connectors
from tests.support.wire import WireServer


@pytest.fixture
def wire():
    with WireServer() as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    """Back-off waits the HTTP client asked for (recorded, not slept: the retry logic is what is tested)."""
    return []


@pytest.fixture
def connect(wire, sleeps):
    """Connectors of the given sources, all pointed at the local wire server."""
    def make(*names: str, timeout_s: float = 2.0, attempts: int = 3):
        urls = {name: wire.url for name in (*names, "pmc-oa")}
        return build_connectors(names, base_urls=urls, timeouts_s={n: timeout_s for n in names}, attempts=attempts,
                                sleep=sleeps.append)
    return make
