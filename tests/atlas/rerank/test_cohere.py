"""Cohere Rerank v3.5 through the real `cohere` SDK against a scripted local server (RET-4/6)."""

import pytest

from forum_atlas.providers import ProviderUnavailable
from forum_atlas.rerank.cohere import CohereReranker
from forum_atlas.retrieval import stages
from forum_atlas.retrieval.model import Candidate, RetrievalOptions, StageResult
from tests.support.wire import Reply, WireServer

PATH = "/v2/rerank"
PASSAGES = {11: "insulin resistance in muscle", 12: "solar panel output", 13: "insulin therapy trial"}


def fused() -> StageResult:
    return StageResult("fusion", "rrf", "1", {}, [Candidate(c, i, 1 / (50 + i)) for i, c in enumerate(PASSAGES, 1)])


def ok_reply(request):
    assert request.body["model"] == "rerank-v3.5"
    order = [2, 0, 1]
    return Reply(200, {"id": "r1", "results": [{"index": i, "relevance_score": 0.9 - 0.3 * n} for n, i in enumerate(order)],
                       "meta": {"api_version": {"version": "2"}}})


@pytest.fixture
def server():
    with WireServer() as srv:
        yield srv


def reranker(server, **kw):
    return CohereReranker(api_key="test-key", base_url=server.url, retry_base_delay=0.0, **kw)


def test_success_reorders_and_sends_the_query_and_passages(server):
    server.queue(PATH, ok_reply)
    stage = stages.rerank(reranker(server), "insulin", fused(), PASSAGES, RetrievalOptions(top_k=2))
    assert [c.chunk_id for c in stage.candidates] == [13, 11]
    assert [c.rank for c in stage.candidates] == [1, 2]
    assert stage.outcome.kind == "ok" and stage.outcome.attempts == 1 and not stage.degraded
    sent = server.requests_to(PATH)[0]
    assert sent.body["query"] == "insulin" and sent.body["documents"] == list(PASSAGES.values())
    assert sent.headers["authorization"] == "Bearer test-key"


def test_rate_limited_then_success_is_retried(server):
    server.queue(PATH, Reply(429, {"message": "slow down"}, {"Retry-After": "0"}), ok_reply)
    stage = stages.rerank(reranker(server), "insulin", fused(), PASSAGES, RetrievalOptions())
    assert stage.outcome.kind == "ok" and stage.outcome.attempts == 2
    assert [c.chunk_id for c in stage.candidates] == [13, 11, 12]
    assert len(server.requests_to(PATH)) == 2


def test_server_error_degrades_to_the_fused_order_and_says_so(server):
    server.always(PATH, Reply(500, {"message": "internal"}))
    stage = stages.rerank(reranker(server, max_retries=1), "insulin", fused(), PASSAGES, RetrievalOptions(top_k=2))
    assert stage.degraded and stage.outcome.kind == "unavailable" and stage.outcome.attempts == 2
    assert [c.chunk_id for c in stage.candidates] == [11, 12]       # fused order, top_k kept
    assert "degraded to the fused order" in stage.note
    with pytest.raises(ProviderUnavailable):
        reranker(server, max_retries=0).rerank("q", ["a"])


def test_auth_and_malformed_replies_are_typed(server):
    server.queue(PATH, Reply(401, {"message": "invalid api token"}))
    stage = stages.rerank(reranker(server), "insulin", fused(), PASSAGES, RetrievalOptions())
    assert stage.outcome.kind == "auth" and stage.outcome.attempts == 1 and stage.candidates
    server.queue(PATH, Reply(200, {"id": "r", "results": [{"index": 0, "relevance_score": 0.5}]}))
    stage = stages.rerank(reranker(server), "insulin", fused(), PASSAGES, RetrievalOptions())
    assert stage.outcome.kind == "bad_response" and "degraded" in stage.note


def test_missing_key_is_a_setup_error(monkeypatch):
    from forum_atlas.rerank.base import RerankerSetupError

    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("CO_API_KEY", raising=False)
    with pytest.raises(RerankerSetupError, match="COHERE_API_KEY"):
        CohereReranker()
