"""Issue 25, item 3: an outage is an error, not a brief. When the engine or the verifier cannot be
reached after its retries (the real OpenAI SDK against a local server that answers 500, or a port
nobody listens on), `atlas ask` exits non-zero with the typed outcome, seals nothing, and leaves
only the provider-call log (a PROVIDER_UNREACHABLE audit event) saying what was tried."""

from __future__ import annotations

import socket

import pytest

from forum_atlas.cli.main import main
from forum_atlas.store.db import verify_audit
from tests.flows.test_deliberate import CHAT, QUESTION, _model, atlas_env, corpus  # noqa: F401  (fixtures)
from tests.support.wire import Reply, WireServer

SEALED = ("evidence_snapshots", "briefs", "brief_sections", "brief_claims", "citations", "provider_calls")


def _count(db, table: str, where: str = "") -> int:
    with db.connection() as conn:
        return conn.execute(f"SELECT count(*) AS n FROM forum.{table} {where}").fetchone()["n"]


def _unreachable_events(db) -> list[dict]:
    with db.connection() as conn:
        return [r["payload"] for r in conn.execute(
            "SELECT payload FROM forum.events WHERE kind = 'PROVIDER_UNREACHABLE' ORDER BY event_id")]


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


@pytest.fixture
def openai_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def _ask_fails(capsys) -> str:
    assert main(["ask", QUESTION, "--engine", "openai", "--persona", "technical"]) == 1
    captured = capsys.readouterr()
    assert "Brief #" not in captured.out
    # In this process Prefect's loggers were set up before the CLI could quiet them (tests/cli/test_errors.py
    # runs the command alone): the CLI's own line is the one that says "atlas: error".
    (line,) = [line for line in captured.err.splitlines() if line.startswith("atlas: error:")]
    return line


def _nothing_sealed(db) -> None:
    assert {t: _count(db, t) for t in SEALED} == dict.fromkeys(SEALED, 0)
    with db.connection() as conn:
        assert verify_audit(conn).intact


def test_an_engine_answering_500_is_an_error_and_seals_nothing(prefect_env, atlas_env, corpus, openai_env,
                                                               monkeypatch, capsys):
    with WireServer() as server:
        server.always(CHAT, lambda received: Reply(500, {"error": {"message": "internal error"}}))
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        line = _ask_fails(capsys)
        tried = len(server.requests_to(CHAT))
    assert "draft:technical#1" in line and "could not be reached (unavailable after 3 attempts)" in line
    assert "no brief was sealed" in line and tried == 3  # the SDK's request and its two retries
    _nothing_sealed(corpus)
    (logged,) = _unreachable_events(corpus)
    assert logged["sealed"] is False and logged["outcome"] == "unavailable"
    call = logged["call"]
    assert (call["stage"], call["provider"], call["outcome"], call["attempts"]) == (
        "draft:technical#1", "openai:gpt-4o-mini", "unavailable", 3)
    assert call["flow_run_id"] and call["task_run_id"] and "vitamin D" in logged["question"]


def test_an_engine_nobody_listens_for_is_an_error(prefect_env, atlas_env, corpus, openai_env, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", _closed_port_url())
    line = _ask_fails(capsys)
    assert "could not be reached (unavailable after 3 attempts)" in line
    _nothing_sealed(corpus)
    assert [e["call"]["stage"] for e in _unreachable_events(corpus)] == ["draft:technical#1"]


def test_a_verifier_that_cannot_be_reached_is_an_error(prefect_env, atlas_env, corpus, openai_env, monkeypatch,
                                                       capsys):
    """The engine answers; the separate verifier model's endpoint refuses: no brief either (its
    "abstain" would have downgraded every claim and sealed a brief about an outage)."""
    with WireServer() as engine, WireServer() as verifier:
        engine.always(CHAT, _model)
        verifier.always(CHAT, lambda received: Reply(503, {"error": {"message": "down"}}, headers={"Retry-After": "0"}))
        monkeypatch.setenv("OPENAI_BASE_URL", engine.url + "/v1")
        monkeypatch.setenv("ATLAS_SUPPORT_VERIFIER", "openai")
        monkeypatch.setenv("ATLAS_SUPPORT_BASE_URL", verifier.url + "/v1")
        line = _ask_fails(capsys)
        assert len(verifier.requests_to(CHAT)) == 3 and engine.requests_to(CHAT)
    assert "support" in line and "could not be reached (unavailable after 3 attempts)" in line
    _nothing_sealed(corpus)
    (logged,) = _unreachable_events(corpus)
    assert (logged["call"]["stage"], logged["outcome"]) == ("support", "unavailable")


def test_a_bad_answer_still_renders_insufficient_evidence(prefect_env, atlas_env, corpus, openai_env, monkeypatch,
                                                          capsys):
    """What the model said, not whether it could be reached: a reply that is not the JSON asked for
    stays a section's "insufficient evidence" reason, and the brief is sealed."""
    from tests.flows.test_deliberate import _completion

    with WireServer() as server:
        server.always(CHAT, lambda received: Reply(200, {**_completion({}), "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "not json"}}]}))
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        assert main(["ask", QUESTION, "--engine", "openai", "--persona", "technical"]) == 0
    assert "insufficient evidence" in capsys.readouterr().out
    assert _count(corpus, "briefs") == 1 and _unreachable_events(corpus) == []
