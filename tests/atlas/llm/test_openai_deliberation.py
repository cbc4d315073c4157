"""OpenAIDeliberationEngine through the real `openai` SDK against a scripted local server."""

from __future__ import annotations

import json
import socket

import pytest

from forum_atlas.calls import digest_of
from forum_atlas.config import LLMOptions
from forum_atlas.deliberation.engine import DeliberationEngine
from forum_atlas.deliberation.model import (
    AuditedClaim,
    ClaimDraft,
    DraftRequest,
    Finding,
    Passage,
    PersonaAssignment,
    SynthesisRequest,
)
from forum_atlas.llm.openai_deliberation import OpenAIDeliberationEngine, parse_claims
from forum_atlas.providers import ProviderAuthError, ProviderRateLimited, ProviderTimeout, ProviderUnavailable
from tests.support.wire import Reply, WireServer

PATH = "/v1/chat/completions"
KEY = "sk-test-SECRET-7f3a9"

PASSAGES = (
    Passage(label="S1", chunk_id=11, document_id=1, document_version=1, title="Grid report 2024",
            text="Battery storage capacity doubled in 2023, reaching 16 GW.", source_name="EIA"),
    Passage(label="S2", chunk_id=12, document_id=2, document_version=3, title="Interconnection queues",
            text="Interconnection queues grew to 2,600 GW of proposed capacity.", source_name="LBNL"),
)
PERSONA = PersonaAssignment(role="technical", topic="grid storage", focus_query="grid storage capacity",
                            reason="the question asks about storage technology")
REQUEST = DraftRequest(question="Will grid storage keep growing in 2025?", persona=PERSONA, passages=PASSAGES)

GOOD = {"claims": [
    {"text": "Battery storage capacity doubled in 2023.", "tag": "SOURCED", "source": "S1",
     "quote": "Battery storage capacity doubled in 2023, reaching 16 GW."},
    {"text": "Queue growth suggests continued build-out.", "tag": "INFERRED", "source": None, "quote": None},
], "insufficient_evidence": None}


def completion(content: str | None, finish_reason: str = "stop") -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def ok(payload: object) -> Reply:
    return Reply(200, completion(payload if isinstance(payload, str) else json.dumps(payload)))


@pytest.fixture
def srv():
    with WireServer() as server:
        yield server


def engine(srv, **options) -> OpenAIDeliberationEngine:
    options.setdefault("retries", 0)
    return OpenAIDeliberationEngine(model="test-model", api_key=KEY, base_url=srv.url + "/v1",
                                    options=LLMOptions(**options))


def test_is_a_deliberation_engine(srv):
    e: DeliberationEngine = engine(srv)
    assert (e.name, e.extractive) == ("openai:test-model", False) and e.version


def test_good_answer_is_parsed_and_recorded(srv):
    srv.queue(PATH, ok(GOOD))
    reply = engine(srv).draft(REQUEST)
    assert reply.malformed is None and reply.insufficient is None
    assert reply.claims == [
        ClaimDraft("Battery storage capacity doubled in 2023.", "SOURCED", "S1",
                   "Battery storage capacity doubled in 2023, reaching 16 GW."),
        ClaimDraft("Queue growth suggests continued build-out.", "INFERRED", None, None),
    ]
    body = srv.requests_to(PATH)[0].body
    assert body["model"] == "test-model" and body["temperature"] == 0 and body["max_tokens"] == 2048
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    claim = schema["properties"]["claims"]["items"]["properties"]
    assert claim["source"]["anyOf"][0]["enum"] == ["S1", "S2"]  # the labels actually given
    assert claim["quote"]["anyOf"][0]["maxLength"] == 400
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "SOURCED" in system and "INFERRED" in system and "VERBATIM" in system and "insufficient_evidence" in system
    assert "paraphrase is rejected" not in system  # the strict rules are for the retry
    assert "Will grid storage keep growing in 2025?" in user and "grid storage" in user and "Technical" in user
    assert "[S1] Grid report 2024\nBattery storage capacity doubled in 2023" in user
    assert "[S2] Interconnection queues" in user
    call = reply.call
    assert (call.stage, call.provider, call.outcome, call.attempts) == ("draft:technical#1", "openai:test-model",
                                                                        "ok", 1)
    assert call.version == engine(srv).version and call.latency_ms > 0
    assert call.input_digest == digest_of(REQUEST)
    assert call.prompt_hash == digest_of(body["messages"])  # the exact messages sent


def test_honest_insufficient_evidence_is_not_malformed(srv):
    srv.queue(PATH, ok({"claims": [], "insufficient_evidence": "the passages do not discuss storage costs"}))
    reply = engine(srv).draft(REQUEST)
    assert reply.claims == [] and reply.malformed is None
    assert reply.insufficient == "the passages do not discuss storage costs" and reply.call.outcome == "ok"


MALFORMED = [
    ("not json at all", "not JSON"),
    (json.dumps(["a", "list"]), "not an object"),
    (json.dumps({"insufficient_evidence": None}), "'claims' is missing"),
    (json.dumps({"claims": "none", "insufficient_evidence": None}), "'claims' is missing or not a list"),
    (json.dumps({"claims": [{"text": 3, "tag": "INFERRED"}]}), "'text' missing"),
    (json.dumps({"claims": [{"text": "x", "tag": "GUESS"}]}), "unknown tag 'GUESS'"),
    (json.dumps({"claims": [], "insufficient_evidence": None}), "no claims and no insufficient_evidence"),
    (json.dumps({"claims": [], "insufficient_evidence": 42}), "'insufficient_evidence' must be null or a string"),
    (json.dumps({"claims": ["just text"]}), "claim 1: not an object"),
    ("[" * 100_000, "not JSON"),
]


@pytest.mark.parametrize("content, reason", MALFORMED)
def test_an_answer_with_nothing_usable_is_a_validation_failure_not_an_exception(srv, content, reason):
    srv.queue(PATH, Reply(200, completion(content)))
    reply = engine(srv).draft(REQUEST)
    assert reply.claims == [] and reason in reply.malformed
    assert reply.call.outcome == "bad_response" and reason in reply.call.detail


UNUSABLE_CITATIONS = [
    ({"source": "S1"}, "SOURCED without a quote"),
    ({"quote": "q"}, "SOURCED without a source label"),
    ({"source": "S9", "quote": "q"}, "'S9' is not one of the passages (S1, S2)"),
    ({"source": 1, "quote": "q"}, "'source' is not a passage label"),
    ({"source": "S1", "quote": ["q"]}, "'quote' is not a string"),
    ({"source": "S1", "quote": "q" * 401}, "quote of 401 characters, over the 400-character cap"),
]


@pytest.mark.parametrize("citation, reason", UNUSABLE_CITATIONS)
def test_a_sourced_claim_with_an_unusable_citation_is_kept_as_inferred_with_its_reason(srv, citation, reason):
    srv.queue(PATH, ok({"claims": [{"text": "x", "tag": "SOURCED", **citation}], "insufficient_evidence": None}))
    reply = engine(srv).draft(REQUEST)
    assert reply.malformed is None and reply.claims == [ClaimDraft("x", "INFERRED", None, None)]
    assert reply.call.outcome == "degraded" and reason in reply.call.detail and "kept as INFERRED" in reply.call.detail


def test_an_answer_too_large_to_read_is_malformed_without_parsing():
    parsed = parse_claims("[" * 8_000_001, ["S1"])
    assert parsed.claims == [] and parsed.malformed == "answer of 8,000,001 characters; at most 8,000,000 are read"


def test_cut_off_and_empty_answers_are_malformed(srv):
    srv.queue(PATH, Reply(200, completion(json.dumps(GOOD)[:40], finish_reason="length")),
              Reply(200, completion(None)))
    assert "cut off" in engine(srv).draft(REQUEST).malformed
    assert engine(srv).draft(REQUEST).malformed == "empty answer"


def test_an_answer_cut_off_at_max_tokens_keeps_its_complete_claims(srv):
    whole = json.dumps(GOOD)
    cut = whole[:whole.index('{"text": "Queue growth')] + '{"text": "Queue gro'
    srv.queue(PATH, Reply(200, completion(cut, finish_reason="length")))
    reply = engine(srv).draft(REQUEST)
    assert reply.malformed is None and [c.tag for c in reply.claims] == ["SOURCED"]
    assert reply.call.outcome == "degraded" and "cut off (finish_reason=length) after 1 complete claim" in reply.call.detail


def test_one_bad_claim_no_longer_voids_the_answer():
    parsed = parse_claims(json.dumps({"claims": [
        GOOD["claims"][0], {"text": "y", "tag": "SOURCED", "source": "S7", "quote": "q"}, {"tag": "INFERRED"}]}),
        ["S1", "S2"])
    assert parsed.malformed is None and parsed.claims == [
        ClaimDraft(GOOD["claims"][0]["text"], "SOURCED", "S1", GOOD["claims"][0]["quote"]), ClaimDraft("y", "INFERRED")]
    assert [p.split(":")[0] for p in parsed.problems] == ["claim 2", "claim 3"]


def test_attempt_two_sends_the_stricter_prompt_with_the_failures(srv):
    srv.queue(PATH, ok(GOOD))
    retry = DraftRequest(question=REQUEST.question, persona=PERSONA, passages=PASSAGES, attempt=2,
                         failures=("claim 1: quote not verbatim in S1", "claim 3: source 'S4' is not retrieved"))
    reply = engine(srv).draft(retry)
    system = srv.requests_to(PATH)[0].body["messages"][0]["content"]
    assert "paraphrase is rejected" in system
    assert "Prefer INFERRED, or insufficient_evidence, over a guess" in system
    assert "- claim 1: quote not verbatim in S1" in system and "- claim 3: source 'S4' is not retrieved" in system
    assert reply.call.stage == "draft:technical#2"


def test_digests_are_stable_for_the_same_request(srv):
    srv.always(PATH, ok(GOOD))
    first, second = engine(srv).draft(REQUEST), engine(srv).draft(REQUEST)
    assert first.call.input_digest == second.call.input_digest
    assert first.call.prompt_hash == second.call.prompt_hash
    bodies = [r.body["messages"] for r in srv.requests_to(PATH)]
    assert bodies[0] == bodies[1]
    retry = engine(srv).draft(DraftRequest(question=REQUEST.question, persona=PERSONA, passages=PASSAGES,
                                           attempt=2, failures=("x",)))
    assert retry.call.input_digest != first.call.input_digest and retry.call.prompt_hash != first.call.prompt_hash


def test_typed_errors(srv):
    srv.queue(PATH, Reply(401, {"error": {"message": "bad key"}}))
    with pytest.raises(ProviderAuthError) as auth:
        engine(srv, retries=2).draft(REQUEST)
    assert auth.value.status == 401 and auth.value.attempts == 1  # a 401 is not retried
    assert auth.value.call.outcome == "auth" and auth.value.call.stage == "draft:technical#1"

    srv.queue(PATH, Reply(403, {"error": {"message": "forbidden"}}))
    with pytest.raises(ProviderAuthError):
        engine(srv).draft(REQUEST)

    srv.queue(PATH, Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "7"}))
    with pytest.raises(ProviderRateLimited) as limited:
        engine(srv).draft(REQUEST)
    assert limited.value.retry_after == 7.0 and limited.value.call.outcome == "rate_limited"

    srv.queue(PATH, *[Reply(429, {"error": {"message": "slow"}}, headers={"Retry-After": "0"})] * 2)
    with pytest.raises(ProviderRateLimited) as retried:
        engine(srv, retries=1).draft(REQUEST)
    assert retried.value.attempts == 2 and retried.value.call.attempts == 2

    srv.queue(PATH, Reply(503, {"error": {"message": "down"}}, headers={"Retry-After": "0"}))
    with pytest.raises(ProviderUnavailable) as down:
        engine(srv).draft(REQUEST)
    assert down.value.status == 503 and down.value.call.outcome == "unavailable"


def test_timeout_is_typed(srv):
    srv.queue(PATH, Reply(200, completion(json.dumps(GOOD)), delay_s=1.0))
    with pytest.raises(ProviderTimeout) as info:
        engine(srv, timeout_s=0.2).draft(REQUEST)
    assert info.value.call.outcome == "timeout" and info.value.call.latency_ms >= 150


def test_unreachable_server_is_typed_unavailable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    e = OpenAIDeliberationEngine(model="m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1",
                                 options=LLMOptions(retries=0))
    with pytest.raises(ProviderUnavailable):
        e.draft(REQUEST)


def test_api_key_travels_only_in_the_authorization_header(srv):
    srv.queue(PATH, ok(GOOD), Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    e = engine(srv)
    reply = e.draft(REQUEST)
    with pytest.raises(ProviderAuthError) as info:
        e.draft(REQUEST)
    for received in srv.requests_to(PATH):
        assert KEY not in json.dumps(received.body)
        assert received.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(reply.call.as_dict()) and KEY not in repr(e) and KEY not in repr(e.chat)
    assert KEY not in str(info.value) and KEY not in info.value.detail  # masked when the server echoes it
    assert KEY not in json.dumps(info.value.call.as_dict())


def test_missing_api_key_is_an_auth_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderAuthError, match="no API key"):
        OpenAIDeliberationEngine(model="m", base_url="http://127.0.0.1:9/v1")


# --- synthesis ---------------------------------------------------------------------------------------

def _synthesis_request() -> SynthesisRequest:
    verified = AuditedClaim(text="Battery storage capacity doubled in 2023.", claimed_tag="SOURCED", tag="SOURCED",
                            chunk_id=11, source_label="S1",
                            quote="Battery storage capacity doubled in 2023, reaching 16 GW.", verdict="supports")
    inferred = AuditedClaim(text="Build-out is likely to continue.", claimed_tag="INFERRED", tag="INFERRED")
    return SynthesisRequest(question=REQUEST.question,
                            findings=(Finding("technical", verified), Finding("financial", inferred)),
                            passages=(PASSAGES[0],), insufficient_topics=("permitting",))


def test_synthesis_sees_the_findings_and_may_cite_only_their_passages(srv):
    answer = {"claims": [{"text": "Storage capacity doubled in 2023.", "tag": "SOURCED", "source": "S1",
                          "quote": "Battery storage capacity doubled in 2023"},
                         {"text": "Growth will likely continue; permitting is unclear.", "tag": "INFERRED",
                          "source": None, "quote": None}], "insufficient_evidence": None}
    srv.queue(PATH, ok(answer))
    request = _synthesis_request()
    reply = engine(srv).synthesize(request)
    assert reply.malformed is None and [c.tag for c in reply.claims] == ["SOURCED", "INFERRED"]
    assert reply.call.stage == "synthesis" and reply.call.input_digest == digest_of(request)
    user = srv.requests_to(PATH)[0].body["messages"][1]["content"]
    assert "Battery storage capacity doubled in 2023." in user and "Build-out is likely to continue." in user
    assert "permitting" in user and "[S1] Grid report 2024" in user and "[S2]" not in user

    # a SOURCED claim citing a passage outside the request is refused
    srv.queue(PATH, ok({"claims": [{"text": "Queues grew.", "tag": "SOURCED", "source": "S2",
                                    "quote": "Interconnection queues grew"}], "insufficient_evidence": None}))
    refused = engine(srv).synthesize(request)
    assert refused.claims == [ClaimDraft("Queues grew.", "INFERRED")] and refused.malformed is None
    assert "'S2' is not one of the passages (S1)" in refused.call.detail


def test_synthesis_without_findings_makes_no_call(srv):
    request = SynthesisRequest(question="q", findings=(), passages=(), insufficient_topics=("costs", "policy"))
    reply = engine(srv).synthesize(request)
    assert srv.requests == [] and reply.claims == [] and reply.call.attempts == 0
    assert "no audited findings" in reply.insufficient and "costs, policy" in reply.insufficient
