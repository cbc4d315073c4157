"""The OpenAI-compatible path against servers that behave like a real local model (issue 38), through the
real `openai` SDK: a server slower than the old fixed limit, a one-request-at-a-time server that must never
see a second request while it is busy, servers that reject JSON schemas, a half-valid answer, a context
too small for the passages. The old limit (60 s) is scaled down: the server's delay and both timeouts are
settings, so the test takes seconds."""

from __future__ import annotations

import json
import threading
import time

import pytest

from forum_atlas.calls import digest_of
from forum_atlas.chat.budget import GAP, estimate_tokens
from forum_atlas.config import LLMOptions, settings_from_env
from forum_atlas.deliberation.audit import RoundEvidence, audit_reply, settle
from forum_atlas.deliberation.model import ClaimDraft, DraftRequest, Passage, PersonaAssignment
from forum_atlas.deliberation.quotes import quote_in_passage
from forum_atlas.llm.openai_deliberation import OpenAIDeliberationEngine
from forum_atlas.providers import ProviderBadResponse, ProviderTimeout
from tests.support.wire import Received, Reply, WireServer

PATH = "/v1/chat/completions"
KEY = "sk-local"
QUOTE = "Battery storage capacity doubled in 2023, reaching 16 GW."
PASSAGES = (
    Passage(label="S1", chunk_id=11, document_id=1, document_version=1, title="Grid report 2024",
            text=QUOTE + " Most of it was built in Texas and California.", source_name="EIA"),
    Passage(label="S2", chunk_id=12, document_id=2, document_version=3, title="Interconnection queues",
            text="Interconnection queues grew to 2,600 GW of proposed capacity.", source_name="LBNL"),
)
PERSONA = PersonaAssignment(role="technical", topic="grid storage", focus_query="grid storage capacity",
                            reason="the question asks about storage technology")
REQUEST = DraftRequest(question="Will grid storage keep growing in 2025?", persona=PERSONA, passages=PASSAGES)
GOOD = {"claims": [{"text": "Battery storage capacity doubled in 2023.", "tag": "SOURCED", "source": "S1",
                    "quote": QUOTE}], "insufficient_evidence": None}


def completion(content: str) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "local",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def ok(payload: object) -> Reply:
    return Reply(200, completion(json.dumps(payload)))


@pytest.fixture
def srv():
    with WireServer() as server:
        yield server


def engine(srv, **options) -> OpenAIDeliberationEngine:
    return OpenAIDeliberationEngine(model="local", api_key=KEY, base_url=srv.url + "/v1", options=LLMOptions(**options))


class OneAtATime:
    """A responder like llama.cpp's server: one request is worked on at a time, to the end, whether or
    not its client is still there; it records the most requests it ever had in flight."""

    def __init__(self, delays: list[float], answer: Reply):
        self.delays, self.answer = delays, answer
        self.in_flight = self.most_in_flight = self.served = 0
        self._lock = threading.Lock()

    def __call__(self, received: Received) -> Reply:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            delay = self.delays[self.served] if self.served < len(self.delays) else 0.0
            self.served += 1
        time.sleep(delay)
        with self._lock:
            self.in_flight -= 1
        return self.answer


# --- timeouts: a slow server passes with a raised timeout ------------------------------------------

def test_a_server_slower_than_the_old_limit_passes_with_a_raised_timeout(srv, monkeypatch):
    """The settings reach the engine the deliberate flow builds (ATLAS_LLM_TIMEOUT_S; 1 s stands for the
    old fixed 60 s, the server's 2 s for a CPU model reading a long prompt)."""
    from forum_atlas.tasks.deliberation import engine_for

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    slow = OneAtATime([2.0, 2.0], ok(GOOD))
    srv.always(PATH, slow)
    old = settings_from_env({"ATLAS_LLM": "openai", "ATLAS_LLM_TIMEOUT_S": "1", "ATLAS_LLM_RETRIES": "2",
                             "ATLAS_LLM_CONCURRENCY": "1"})
    with pytest.raises(ProviderTimeout) as info:
        engine_for(old).draft(REQUEST)
    assert info.value.attempts == 1 and info.value.call.outcome == "timeout"  # a timed-out request is not re-sent
    raised = settings_from_env({"ATLAS_LLM": "openai", "ATLAS_LLM_TIMEOUT_S": "6", "ATLAS_LLM_RETRIES": "2",
                                "ATLAS_LLM_CONCURRENCY": "1",
                                "ATLAS_LLM_MAX_TOKENS": "300", "ATLAS_LLM_TEMPERATURE": "0.2"})
    reply = engine_for(raised).draft(REQUEST)
    assert reply.malformed is None and [c.tag for c in reply.claims] == ["SOURCED"]
    assert slow.served == 2 and slow.most_in_flight == 1  # the raised call waited for the abandoned one
    body = srv.requests_to(PATH)[-1].body
    assert body["max_tokens"] == 300 and body["temperature"] == 0.2


def test_bad_llm_settings_are_refused_with_the_variable_named():
    with pytest.raises(ValueError, match="ATLAS_LLM_TIMEOUT_S='soon' is not a number"):
        settings_from_env({"ATLAS_LLM_TIMEOUT_S": "soon"})
    with pytest.raises(ValueError, match=r"concurrency must be in \[1, 256\], got 0"):
        settings_from_env({"ATLAS_LLM_CONCURRENCY": "0"})
    with pytest.raises(ValueError, match="context_tokens must leave room for max_tokens"):
        settings_from_env({"ATLAS_LLM_CONTEXT_TOKENS": "1024", "ATLAS_LLM_MAX_TOKENS": "1000"})


def test_the_providers_block_sets_the_llm_options_over_the_environment():
    from forum_atlas.blocks.providers import AtlasProviders

    env = settings_from_env({"ATLAS_LLM_TIMEOUT_S": "30", "ATLAS_LLM_RETRIES": "1"})
    applied = AtlasProviders(llm="openai", llm_timeout_s=900, llm_concurrency=1, llm_context_tokens=2048,
                             llm_max_tokens=512).apply(env)
    assert applied.llm_options == LLMOptions(timeout_s=900, retries=1, max_tokens=512, concurrency=1,
                                             context_tokens=2048)


# --- retries never pile up on a one-request-at-a-time server -----------------------------------------

def test_no_request_is_queued_behind_an_abandoned_one(srv):
    """Three personas draft at once against a server that takes one request at a time; the first request
    outlives its timeout. It is not re-sent, and the others are sent only once the server has finished it:
    the server never has two requests in flight."""
    server = OneAtATime([1.2, 0.2, 0.2], ok(GOOD))
    srv.always(PATH, server)
    e = engine(srv, timeout_s=0.5, retries=2, concurrency=1)
    outcomes: dict[int, object] = {}

    def persona(n: int) -> None:
        time.sleep(0.1 * n)  # the first one is sent first
        try:
            outcomes[n] = e.draft(REQUEST)
        except ProviderTimeout as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=persona, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert isinstance(outcomes[0], ProviderTimeout) and outcomes[0].attempts == 1
    assert all(outcomes[n].malformed is None for n in (1, 2))
    assert server.served == 3 and server.most_in_flight == 1


def test_a_refused_request_is_retried_and_an_abandoned_one_is_closed_after_the_drain_limit(srv):
    srv.queue(PATH, Reply(503, {"error": {"message": "loading model"}}, headers={"Retry-After": "0"}), ok(GOOD))
    reply = engine(srv, retries=1, concurrency=1).draft(REQUEST)
    assert reply.call.attempts == 2 and reply.malformed is None
    # a request the server never answers holds its slot for twice the timeout more (the drain limit), then its
    # connection is closed and the next request is sent
    stuck = OneAtATime([30.0], ok(GOOD))
    srv.always(PATH, stuck)
    e = engine(srv, timeout_s=0.3, concurrency=1)
    started = time.perf_counter()
    with pytest.raises(ProviderTimeout):
        e.draft(REQUEST)
    assert e.draft(REQUEST).malformed is None
    assert 0.85 < time.perf_counter() - started < 5 and stuck.served == 2


# --- structured output: a schema where the server takes one, a clean fallback where not ---------------

def rejecting(levels: dict[str, Reply], answer: Reply):
    """A server that refuses some response_format levels, as named in `levels`."""
    def respond(received: Received) -> Reply:
        fmt = received.body.get("response_format") or {}
        level = "json_object+schema" if fmt.get("type") == "json_object" and "schema" in fmt else fmt.get("type")
        return levels.get(level, answer)
    return respond


SCHEMA_REJECTIONS = {
    # OpenAI-style 400 naming the parameter; llama-cpp-python's 500 for a type it does not know
    "json_schema": Reply(400, {"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is "
                                                    "not supported with this model.", "param": "response_format"}}),
    "json_object+schema": Reply(500, {"error": {"message": "1 validation error: ('body', 'response_format', 'schema')"
                                                           " extra fields not permitted"}}),
}


def test_a_server_that_rejects_schemas_gets_json_mode_with_the_schema_in_the_prompt(srv):
    srv.always(PATH, rejecting(SCHEMA_REJECTIONS, ok(GOOD)))
    first = engine(srv).draft(REQUEST)
    sent = srv.requests_to(PATH)
    formats = [r.body["response_format"] for r in sent]
    assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]
    assert "schema" in formats[1] and "schema" not in formats[2]
    system = sent[-1].body["messages"][0]["content"]
    assert "The JSON object must follow this JSON Schema:" in system and '"enum":["S1","S2"]' in system
    assert first.malformed is None and [c.tag for c in first.claims] == ["SOURCED"]
    assert first.call.attempts == 3 and first.call.prompt_hash == digest_of(sent[-1].body["messages"])
    # the endpoint's level is remembered: the next ask goes straight to json_object
    engine(srv).draft(REQUEST)
    assert [r.body["response_format"] for r in srv.requests_to(PATH)[3:]] == [{"type": "json_object"}]


def test_a_server_that_takes_the_grammar_form_keeps_the_schema_out_of_the_prompt(srv):
    srv.always(PATH, rejecting({"json_schema": SCHEMA_REJECTIONS["json_schema"]}, ok(GOOD)))
    reply = engine(srv).draft(REQUEST)
    last = srv.requests_to(PATH)[-1].body
    assert last["response_format"]["type"] == "json_object" and last["response_format"]["schema"]["required"] == [
        "claims", "insufficient_evidence"]
    assert "JSON Schema" not in last["messages"][0]["content"] and reply.call.attempts == 2


def test_a_rejection_that_does_not_name_the_format_is_not_a_fallback(srv):
    srv.always(PATH, Reply(400, {"error": {"message": "model 'local' not found"}}))
    with pytest.raises(ProviderBadResponse):
        engine(srv).draft(REQUEST)
    assert len(srv.requests_to(PATH)) == 1


# --- keep what is valid ----------------------------------------------------------------------------

def test_a_half_valid_answer_keeps_its_valid_claims_and_reports_the_bad_ones(srv):
    answer = {"claims": [
        {"text": "Battery storage capacity doubled in 2023.", "tag": "SOURCED", "source": "S1", "quote": QUOTE},
        {"text": "Storage doubled.", "tag": "SOURCED", "source": "Passages 1-2", "quote": QUOTE},
        {"text": "Queues signal more build-out.", "tag": "INFERRED", "source": None, "quote": None},
        {"text": "A whole abstract.", "tag": "SOURCED", "source": "S2", "quote": "x " * 600},
        "just a string",
        {"text": ["not", "text"], "tag": "INFERRED"},
        {"text": "Nul\u0000byte", "tag": "MAYBE", "source": None, "quote": None},
    ], "insufficient_evidence": "the passages say nothing about 2025"}
    srv.queue(PATH, ok(answer))
    reply = engine(srv).draft(REQUEST)
    assert reply.malformed is None and reply.insufficient is None  # the stated insufficiency is recorded, not fatal
    assert reply.claims == [ClaimDraft("Battery storage capacity doubled in 2023.", "SOURCED", "S1", QUOTE),
                            ClaimDraft("Storage doubled.", "INFERRED"),
                            ClaimDraft("Queues signal more build-out.", "INFERRED"),
                            ClaimDraft("A whole abstract.", "INFERRED")]
    detail = reply.call.detail
    assert reply.call.outcome == "degraded" and detail.startswith("4 claim(s) kept; ")
    for said in ("claim 2: source 'Passages 1-2' is not one of the passages (S1, S2) (kept as INFERRED)",
                 "claim 4: quote of 1,200 characters, over the 400-character cap (kept as INFERRED)",
                 "claim 5: not an object (dropped)", "claim 6: 'text' missing or empty (dropped)",
                 "claim 7: unknown tag 'MAYBE'", "insufficient_evidence given beside 4 claim(s), claims kept"):
        assert said in detail
    # the valid claims go on to the audit, and the section publishes them
    evidence = RoundEvidence({p.label: p for p in PASSAGES})
    verbatim = {(11, QUOTE): quote_in_passage(QUOTE, PASSAGES[0].text)}
    audited = audit_reply("technical", 1, reply, evidence, verbatim, {("Battery storage capacity doubled in 2023.", 11,
                                                                       QUOTE): "supports"})
    section = settle("technical", "grid storage", [audited], "openai:local")
    assert section.insufficient is None and [c.tag for c in section.claims] == ["SOURCED", "INFERRED", "INFERRED",
                                                                                  "INFERRED"]


# --- a passage budget respected ------------------------------------------------------------------------

def test_the_prompt_fits_the_context_and_keeps_the_best_matching_sentences(srv):
    filler = " ".join(f"Paragraph {n} describes unrelated procurement rules for municipal fleets." for n in range(60))
    key = "Grid storage capacity in Texas reached 9 GW in 2024."
    passages = tuple(Passage(label=f"S{n}", chunk_id=n, document_id=n, document_version=1, title=f"Report {n}",
                             text=(filler + " " + key + " " + filler) if n == 1 else filler, source_name="x")
                     for n in range(1, 7))
    srv.always(PATH, ok(GOOD))
    e = engine(srv, context_tokens=1200, max_tokens=300)
    e.draft(DraftRequest(question="How much grid storage capacity does Texas have?", persona=PERSONA,
                         passages=passages))
    body = srv.requests_to(PATH)[0].body
    prompt = "".join(m["content"] for m in body["messages"])
    assert estimate_tokens(prompt) + 300 <= 1200
    user = body["messages"][1]["content"]
    assert key in user and GAP.strip() in user  # the matching sentence, not the passage's first 4,000 characters
    shown = [label for label in (p.label for p in passages) if f"[{label}] " in user]
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["claims"]["items"]["properties"]["source"]
    assert shown[0] == "S1" and enum["anyOf"][0]["enum"] == shown  # only the labels actually given
    for label in shown:  # every sentence shown is verbatim in its passage
        block = user.split(f"[{label}] ")[1].split("\n", 1)[1].split("\n\n")[0]
        for piece in block.replace("[…]", "\u0000").split("\u0000"):
            assert not piece.strip() or piece.strip() in passages[int(label[1:]) - 1].text
