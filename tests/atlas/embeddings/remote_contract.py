"""What every API embedder must do, exercised through its real SDK against a scripted local server.

`test_voyage.py` and `test_openai.py` subclass `RemoteEmbedderContract` and add the checks that
only their provider has. The fake API answers with hashed bag-of-words vectors of the model's
dimension (base64 float32 when the SDK asks for it, as both real APIs do), so every returned row
can be compared with the vector it must be.
"""

from __future__ import annotations

import base64
import socket
import time
from typing import Any

import numpy as np
import pytest

from forum_atlas.embeddings import EmbedderSetupError, make_embedder
from forum_atlas.embeddings.base import RemoteEmbedder
from forum_atlas.embeddings.hashed import HashedEmbedder
from forum_atlas.providers import (
    ProviderAuthError,
    ProviderBadResponse,
    ProviderOutcome,
    ProviderTimeout,
    ProviderUnavailable,
)
from tests.support.wire import Received, Reply, WireServer

PATH = "/v1/embeddings"
TEXTS = ["Statins lower LDL cholesterol.", "Aspirin reduces the risk of stroke.", "Vitamin D and bone density."]


def error_body(message: str) -> dict[str, Any]:
    # Voyage reads `detail`, OpenAI reads `error.message`: one body serves both SDKs.
    return {"detail": message, "error": {"message": message, "type": "test_error"}}


def encode(vector: Any, encoding_format: str | None) -> Any:
    if encoding_format == "base64":
        return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")
    return [float(x) for x in vector]


def reply_with(rows: list[Any], received: Received, *, indexes: list[int] | None = None) -> Reply:
    fmt = received.body.get("encoding_format")
    data = [{"object": "embedding", "index": i, "embedding": encode(v, fmt)}
            for i, v in zip(indexes or range(len(rows)), rows, strict=True)]
    return Reply(200, {"object": "list", "data": data, "model": received.body["model"],
                       "usage": {"prompt_tokens": 7, "total_tokens": 7}})


class FakeEmbeddingAPI:
    """A responder that embeds each input with the hashed embedder and logs when it was called."""

    def __init__(self, dim: int):
        self.reference = HashedEmbedder(dim=dim)
        self.called_at: list[float] = []

    def expected(self, texts: list[str]) -> np.ndarray:
        return self.reference.embed_documents(texts)

    def __call__(self, received: Received) -> Reply:
        self.called_at.append(time.monotonic())
        return reply_with(list(self.expected(received.body["input"])), received)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class RemoteEmbedderContract:
    provider: str
    model: str
    dim: int
    key_env: str

    def make(self, srv_url: str, **options: Any) -> RemoteEmbedder:
        """The embedder under test, with a test key, pointed at `srv_url`, retrying fast."""
        raise NotImplementedError

    def check_payload(self, body: dict[str, Any], input_type: str) -> None:
        """Provider-specific fields of one request body."""

    @pytest.fixture
    def srv(self):
        with WireServer() as server:
            yield server

    @pytest.fixture
    def api(self, srv: WireServer) -> FakeEmbeddingAPI:
        fake = FakeEmbeddingAPI(self.dim)
        srv.always(PATH, fake)
        return fake

    def test_documents_come_back_in_order_as_unit_vectors(self, srv, api):
        embedder = self.make(srv.url + "/v1")
        matrix = embedder.embed_documents(TEXTS)
        assert matrix.dtype == np.float32 and matrix.shape == (3, self.dim)
        np.testing.assert_allclose(matrix, api.expected(TEXTS), atol=1e-6)
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
        (request,) = srv.requests_to(PATH)
        assert request.headers["authorization"] == "Bearer test-key"
        assert request.body["model"] == self.model and request.body["input"] == TEXTS
        self.check_payload(request.body, "document")

    def test_query_is_one_vector(self, srv, api):
        vector = self.make(srv.url + "/v1").embed_query("does aspirin prevent stroke?")
        assert vector.shape == (self.dim,)
        np.testing.assert_allclose(vector, api.expected(["does aspirin prevent stroke?"])[0], atol=1e-6)
        self.check_payload(srv.requests_to(PATH)[0].body, "query")

    def test_large_inputs_are_split_into_batches_and_reassembled(self, srv, api):
        texts = [f"abstract number {i} about trial {i * 7}" for i in range(5)]
        matrix = self.make(srv.url + "/v1", batch_size=2).embed_documents(texts)
        assert [r.body["input"] for r in srv.requests_to(PATH)] == [texts[0:2], texts[2:4], texts[4:5]]
        np.testing.assert_allclose(matrix, api.expected(texts), atol=1e-6)

    def test_batch_size_above_the_api_limit_is_refused(self, srv):
        with pytest.raises(ValueError, match="batch_size"):
            self.make(srv.url + "/v1", batch_size=100_000)

    def test_429_with_retry_after_is_waited_out_then_succeeds(self, srv, api):
        srv.queue(PATH, Reply(429, error_body("rate limited"), {"Retry-After": "1"}))
        outcomes: list[ProviderOutcome] = []
        started = time.monotonic()
        matrix = self.make(srv.url + "/v1", on_outcome=outcomes.append).embed_documents(TEXTS[:1])
        assert matrix.shape == (1, self.dim)
        np.testing.assert_allclose(matrix, api.expected(TEXTS[:1]), atol=1e-6)
        assert len(srv.requests_to(PATH)) == 2
        assert api.called_at[0] - started >= 0.95  # the server's Retry-After, not the tiny test back-off
        (outcome,) = outcomes
        assert (outcome.kind, outcome.attempts, outcome.provider) == ("ok", 2, self.provider)

    def test_persistent_500_raises_typed_unavailable_after_every_attempt(self, srv):
        srv.always(PATH, Reply(500, error_body("internal error"), {"retry-after-ms": "10"}))
        outcomes: list[ProviderOutcome] = []
        embedder = self.make(srv.url + "/v1", max_retries=2, on_outcome=outcomes.append)
        with pytest.raises(ProviderUnavailable) as caught:
            embedder.embed_documents(TEXTS)
        assert (caught.value.status, caught.value.attempts) == (500, 3)
        assert len(srv.requests_to(PATH)) == 3
        assert [(o.kind, o.attempts) for o in outcomes] == [("unavailable", 3)]

    def test_401_is_an_auth_error_and_is_not_retried(self, srv):
        srv.always(PATH, Reply(401, error_body("invalid api key")))
        with pytest.raises(ProviderAuthError) as caught:
            self.make(srv.url + "/v1").embed_documents(TEXTS)
        assert caught.value.status == 401 and "invalid api key" in str(caught.value)
        assert len(srv.requests_to(PATH)) == 1

    @pytest.mark.parametrize("malformed", [
        pytest.param(lambda rec, api: Reply(200, "<html>gateway</html>"), id="not-json"),
        pytest.param(lambda rec, api: Reply(200, {"object": "list", "usage": {"total_tokens": 1}}), id="no-data"),
        pytest.param(lambda rec, api: reply_with(list(api.expected(rec.body["input"]))[:-1], rec), id="one-short"),
        pytest.param(lambda rec, api: reply_with([v[:-1] for v in api.expected(rec.body["input"])], rec),
                     id="wrong-dimension"),
        pytest.param(lambda rec, api: reply_with([np.zeros(api.reference.dim)] * len(rec.body["input"]), rec),
                     id="zero-vectors"),
        pytest.param(lambda rec, api: reply_with([[float("nan")] * api.reference.dim] * len(rec.body["input"]),
                                                 rec), id="nan"),
    ])
    def test_malformed_reply_is_a_bad_response_not_a_result(self, srv, malformed):
        fake = FakeEmbeddingAPI(self.dim)
        srv.always(PATH, lambda received: malformed(received, fake))
        with pytest.raises(ProviderBadResponse):
            self.make(srv.url + "/v1").embed_documents(TEXTS)
        assert len(srv.requests_to(PATH)) == 1

    def test_slow_server_is_a_typed_timeout(self, srv, api):
        srv.queue(PATH, Reply(200, {}, delay_s=1.5))
        with pytest.raises(ProviderTimeout):
            self.make(srv.url + "/v1", timeout=0.3, max_retries=0).embed_documents(TEXTS)

    def test_unreachable_server_is_typed_unavailable(self):
        with pytest.raises(ProviderUnavailable):
            self.make(closed_port_url(), max_retries=0).embed_documents(TEXTS)

    def test_blank_text_is_refused_before_any_request(self, srv, api):
        with pytest.raises(ValueError, match="text 1 is blank"):
            self.make(srv.url + "/v1").embed_documents(["fine", "   "])
        with pytest.raises(TypeError, match="not one string"):
            self.make(srv.url + "/v1").embed_documents("a bare string")
        assert srv.requests == []

    def test_no_texts_means_no_request(self, srv, api):
        assert self.make(srv.url + "/v1").embed_documents([]).shape == (0, self.dim)
        assert srv.requests == []

    def test_missing_key_names_the_variable(self, monkeypatch):
        monkeypatch.delenv(self.key_env, raising=False)
        with pytest.raises(EmbedderSetupError, match=self.key_env):
            make_embedder(self.provider)

    def test_key_and_options_through_make_embedder(self, srv, api, monkeypatch):
        monkeypatch.setenv(self.key_env, "key-from-env")
        embedder = make_embedder(self.provider, base_url=srv.url + "/v1")
        assert isinstance(embedder, RemoteEmbedder)
        assert embedder.name == f"{self.provider}/{self.model}@{self.dim}" and embedder.dim == self.dim
        assert self.model in embedder.version and embedder.engine
        embedder.embed_documents(TEXTS[:1])
        assert srv.requests_to(PATH)[0].headers["authorization"] == "Bearer key-from-env"
        with pytest.raises(TypeError):
            make_embedder(self.provider, base_url=srv.url + "/v1", no_such_option=1)
