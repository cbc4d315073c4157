"""Issue 37 (1): the CLI's API client (Prefect's, as `atlas ops deploy`, `atlas lane …` use it) retries what a busy
server answers — 503 (Prefect on SQLite under concurrent writes), 429 — instead of failing the command. Prefect's
client does it by default (PREFECT_CLIENT_MAX_RETRIES, 5); this guards that nothing here turns it off."""

from prefect.settings import PREFECT_API_URL, temporary_settings

from forum_atlas.runtime import ops_stack
from tests.support.wire import Reply, WireServer

NOW = {"Retry-After": "0"}   # the client waits what the server asks: no back-off seconds in the test


def test_a_command_against_a_busy_server_retries_503_and_429_then_succeeds():
    with WireServer() as server:
        server.queue("/api/flows/filter", Reply(503, {"exception_message": "database is locked"}, NOW),
                     Reply(429, {"detail": "slow down"}, NOW), Reply(503, {}, NOW), Reply(200, []))
        server.always("/api/deployments/filter", Reply(200, []))
        with temporary_settings(updates={PREFECT_API_URL: f"{server.url}/api"}):
            assert ops_stack._deployments() == {}
    assert [r.method for r in server.requests_to("/api/flows/filter")] == ["POST"] * 4
