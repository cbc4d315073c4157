"""OpenAISupportVerifier through the real `openai` SDK against a scripted local server: malformed
output is never read as "supports"."""

from __future__ import annotations

import json

import pytest

from forum_atlas.calls import digest_of
from forum_atlas.config import LLMOptions
from forum_atlas.entailment.base import SupportQuery, SupportVerifier
from forum_atlas.entailment.openai_verifier import OpenAISupportVerifier, read_verdicts
from forum_atlas.providers import ProviderAuthError, ProviderRateLimited, ProviderUnavailable
from tests.support.wire import Received, Reply, WireServer

PATH = "/v1/chat/completions"
KEY = "sk-verifier-SECRET-11"
QUERIES = [
    SupportQuery("Storage doubled in 2023.", "Battery storage capacity doubled in 2023.",
                 "Battery storage capacity doubled in 2023. Prices fell."),
    SupportQuery("Queues shrank.", "Interconnection queues grew to 2,600 GW.",
                 "Interconnection queues grew to 2,600 GW."),
    SupportQuery("Wind output rose.", "Solar output rose.", "Solar output rose. Wind was flat."),
]


def completion(content: str | None, finish_reason: str = "stop") -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def answer(*pairs: tuple[object, object]) -> Reply:
    return Reply(200, completion(json.dumps({"verdicts": [{"i": i, "verdict": v} for i, v in pairs]})))


@pytest.fixture
def srv():
    with WireServer() as server:
        yield server


def verifier(srv, **options) -> OpenAISupportVerifier:
    return OpenAISupportVerifier(model="judge-model", api_key=KEY, base_url=srv.url + "/v1",
                                 options=LLMOptions(retries=0), **options)


def test_verdicts_are_read_by_index_and_recorded(srv):
    srv.queue(PATH, answer((2, "contextual"), (0, "supports"), (1, "contradicts")))
    v: SupportVerifier = verifier(srv)
    judgement = v.judge(QUERIES)
    assert judgement.verdicts == ["supports", "contradicts", "contextual"]
    (call,) = judgement.calls
    body = srv.requests_to(PATH)[0].body
    assert (call.stage, call.provider, call.outcome) == ("support", "openai:judge-model", "ok")
    assert call.prompt_hash == digest_of(body["messages"])
    assert call.input_digest == digest_of([[q.claim, q.quote, q.passage] for q in QUERIES])
    assert body["temperature"] == 0 and body["response_format"] == {"type": "json_object"}
    items = json.loads(body["messages"][1]["content"])["items"]
    assert [(it["i"], it["claim"]) for it in items] == [(i, q.claim) for i, q in enumerate(QUERIES)]
    assert "never instructions" in body["messages"][0]["content"]


def test_batches_split_the_queries(srv):
    def reply_all(received: Received) -> Reply:
        items = json.loads(received.body["messages"][1]["content"])["items"]
        return answer(*[(it["i"], "supports" if "doubled" in it["claim"] else "contextual") for it in items])

    srv.always(PATH, reply_all)
    judgement = verifier(srv, batch_size=2).judge(QUERIES)
    assert judgement.verdicts == ["supports", "contextual", "contextual"]
    assert len(srv.requests_to(PATH)) == 2 and len(judgement.calls) == 2
    assert judgement.calls[0].input_digest != judgement.calls[1].input_digest
    assert verifier(srv).judge([]).verdicts == [] and len(srv.requests_to(PATH)) == 2  # nothing to ask


MALFORMED = [
    (completion("not json"), ["abstain"] * 3, "not JSON"),
    (completion(json.dumps({"verdict": "supports"})), ["abstain"] * 3, "no 'verdicts' list"),
    (completion(json.dumps({"verdicts": "supports"})), ["abstain"] * 3, "no 'verdicts' list"),
    (completion(json.dumps({"verdicts": [{"i": 0, "verdict": "SUPPORTED"}, {"i": 1, "verdict": "supports"},
                                         {"i": 2, "verdict": "supports"}]})),
     ["abstain", "supports", "supports"], "unknown verdict 'SUPPORTED'"),
    (completion(json.dumps({"verdicts": [{"i": 0, "verdict": "supports"}, {"i": 0, "verdict": "contradicts"},
                                         {"i": 1, "verdict": "contextual"}, {"i": 2, "verdict": "contextual"}]})),
     ["abstain", "contextual", "contextual"], "answered twice"),
    (completion(json.dumps({"verdicts": [{"i": True, "verdict": "supports"}, {"i": "1", "verdict": "supports"},
                                         {"i": 7, "verdict": "supports"}, {"i": 2, "verdict": "supports"}]})),
     ["abstain", "abstain", "supports"], "is not one of 0..2"),
    (completion(json.dumps({"verdicts": [{"i": 1, "verdict": "contradicts"}]})),
     ["abstain", "contradicts", "abstain"], "no verdict for item(s) 0, 2"),
    (completion(json.dumps({"verdicts": [{"i": 0, "verdict": "supports"}, {"i": 1, "verdict": "supports"},
                                         {"i": 2, "verdict": "supports"}]}), finish_reason="length"),
     ["abstain"] * 3, "cut off"),
    (completion(None), ["abstain"] * 3, "not JSON"),
]


@pytest.mark.parametrize("body, expected, problem", MALFORMED)
def test_malformed_output_abstains_and_is_recorded_as_bad_response(srv, body, expected, problem):
    srv.queue(PATH, Reply(200, body))
    judgement = verifier(srv).judge(QUERIES)
    assert judgement.verdicts == expected
    call = judgement.calls[0]
    assert call.outcome == "bad_response" and problem in call.detail and call.detail.endswith("-> abstain")


def test_read_verdicts_never_invents_support():
    for content in ["", "null", "[]", '{"verdicts": null}', '{"verdicts": [1, 2, 3]}',
                    '{"verdicts": [{"i": 0}]}', '{"verdicts": [{"verdict": "supports"}]}',
                    '{"verdicts": [{"i": 0.0, "verdict": "supports"}]}']:
        verdicts, problems = read_verdicts(content, 2)
        assert verdicts == ["abstain", "abstain"] and problems, content
    assert read_verdicts('{"verdicts": [{"i": 0, "verdict": " Supports "}]}', 1) == (["supports"], [])


def test_provider_errors_are_typed_and_carry_the_call_records(srv):
    srv.queue(PATH, answer((0, "supports"), (1, "supports")),
              Reply(429, {"error": {"message": "slow"}}, headers={"Retry-After": "3"}))
    with pytest.raises(ProviderRateLimited) as info:
        verifier(srv, batch_size=2).judge(QUERIES)
    assert info.value.retry_after == 3.0 and info.value.call.outcome == "rate_limited"
    assert [c.outcome for c in info.value.calls] == ["ok", "rate_limited"]

    srv.queue(PATH, Reply(401, {"error": {"message": f"bad key {KEY}"}}))
    with pytest.raises(ProviderAuthError) as auth:
        verifier(srv).judge(QUERIES)
    assert KEY not in str(auth.value)

    srv.queue(PATH, Reply(500, {"error": {"message": "boom"}}))
    with pytest.raises(ProviderUnavailable):
        verifier(srv).judge(QUERIES)


def test_api_key_never_in_a_request_body(srv):
    srv.queue(PATH, answer((0, "supports"), (1, "contradicts"), (2, "abstain")))
    judgement = verifier(srv).judge(QUERIES)
    (received,) = srv.requests_to(PATH)
    assert KEY not in json.dumps(received.body) and received.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in json.dumps(judgement.calls[0].as_dict())


def test_long_passages_are_capped(srv):
    srv.queue(PATH, answer((0, "contextual")))
    verifier(srv, max_passage_chars=50).judge([SupportQuery("c", "q", "x" * 500)])
    items = json.loads(srv.requests_to(PATH)[0].body["messages"][1]["content"])["items"]
    assert items[0]["passage"] == "x" * 50
