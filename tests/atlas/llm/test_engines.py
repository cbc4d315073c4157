"""Driver engines: the offline rule, and the OpenAI engine through the real SDK on a local server."""

from __future__ import annotations

import json

import pytest

from forum_atlas.config import LLMOptions
from forum_atlas.llm import OfflineDriverEngine
from forum_atlas.llm.openai_engine import OpenAIDriverEngine
from forum_atlas.providers import ProviderAuthError, ProviderBadResponse, ProviderRateLimited, ProviderUnavailable
from tests.support.wire import Reply, WireServer

PATH = "/v1/chat/completions"


def completion(content: str) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@pytest.fixture
def srv():
    with WireServer() as server:
        yield server


def engine(srv, max_retries: int = 2):
    return OpenAIDriverEngine(model="test-model", api_key="k", base_url=srv.url + "/v1",
                              options=LLMOptions(retries=max_retries))


def test_offline_rule_is_deterministic_and_centred():
    rule = OfflineDriverEngine()
    first = rule.propose_drivers("Will the unemployment rate rise after the tariff increase?", base_rate=0.4)
    assert [d.name for d in first] == ["unemployment", "rate", "rise"]
    assert first == rule.propose_drivers("Will the unemployment rate rise after the tariff increase?", base_rate=0.4)
    assert all(d.effect == 0 and d.effect_sd == 0.5 for d in first)
    assert sum(d.weight for d in first) == pytest.approx(1.0)


def test_openai_engine_parses_drivers_and_sends_json_mode(srv):
    drivers = {"drivers": [{"name": "wages", "hypothesis": "wage growth slows", "effect": -0.4, "effect_sd": 0.2,
                            "weight": 0.6}, {"name": "claims", "hypothesis": "claims rise", "effect": 0.7,
                                             "weight": 0.4}]}
    srv.queue(PATH, Reply(200, completion(json.dumps(drivers))))
    result = engine(srv).propose_drivers("Will UNRATE rise?", base_rate=0.45)
    assert [(d.name, d.effect, d.weight) for d in result] == [("wages", -0.4, 0.6), ("claims", 0.7, 0.4)]
    body = srv.requests_to(PATH)[0].body
    assert body["model"] == "test-model" and body["response_format"] == {"type": "json_object"}
    assert "Will UNRATE rise?" in body["messages"][1]["content"]


def test_openai_engine_typed_errors(srv):
    srv.queue(PATH, Reply(401, {"error": {"message": "bad key"}}))
    with pytest.raises(ProviderAuthError):
        engine(srv, max_retries=0).propose_drivers("q", base_rate=0.5)
    srv.queue(PATH, Reply(429, {"error": {"message": "slow"}}, headers={"Retry-After": "0"}),
              Reply(429, {"error": {"message": "slow"}}, headers={"Retry-After": "0"}))
    with pytest.raises(ProviderRateLimited) as info:
        engine(srv, max_retries=1).propose_drivers("q", base_rate=0.5)
    assert info.value.attempts == 2
    srv.queue(PATH, Reply(503, {"error": {"message": "down"}}, headers={"Retry-After": "0"}))
    with pytest.raises(ProviderUnavailable):
        engine(srv, max_retries=0).propose_drivers("q", base_rate=0.5)
    srv.queue(PATH, Reply(200, completion("not json")))
    with pytest.raises(ProviderBadResponse, match="not a JSON object"):
        engine(srv).propose_drivers("q", base_rate=0.5)
    srv.queue(PATH, Reply(200, completion(json.dumps({"drivers": [{"name": "x", "hypothesis": "h", "effect": 1,
                                                                    "weight": 3}]}))))
    with pytest.raises(ProviderBadResponse, match="weight must be in"):
        engine(srv).propose_drivers("q", base_rate=0.5)
