"""OpenAIEmbedder through the real `openai` SDK against a local server (see remote_contract)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from forum_atlas.embeddings.openai import OpenAIEmbedder
from forum_atlas.providers import ProviderBadResponse
from tests.atlas.embeddings.remote_contract import PATH, TEXTS, FakeEmbeddingAPI, RemoteEmbedderContract, reply_with


class TestOpenAIEmbedder(RemoteEmbedderContract):
    provider = "openai"
    model = "text-embedding-3-small"
    dim = 1536
    key_env = "OPENAI_API_KEY"

    def make(self, srv_url: str, **options: Any) -> OpenAIEmbedder:
        return OpenAIEmbedder(api_key="test-key", base_url=srv_url, **options)

    def check_payload(self, body: dict[str, Any], input_type: str) -> None:
        assert "dimensions" not in body  # the model's own 1536
        assert body["encoding_format"] == "base64"  # the SDK's compact wire format, decoded for us

    def test_dimensions_are_requested_when_shorter(self, srv):
        srv.always(PATH, FakeEmbeddingAPI(256))
        embedder = self.make(srv.url + "/v1", dim=256)
        assert embedder.embed_documents(TEXTS).shape == (3, 256)
        assert srv.requests_to(PATH)[0].body["dimensions"] == 256
        assert embedder.name == "openai/text-embedding-3-small@256"

    def test_out_of_order_reply_is_put_back_in_input_order(self, srv):
        fake = FakeEmbeddingAPI(self.dim)
        srv.always(PATH, lambda rec: reply_with(list(fake.expected(rec.body["input"]))[::-1], rec, indexes=[2, 1, 0]))
        matrix = self.make(srv.url + "/v1").embed_documents(TEXTS)
        np.testing.assert_allclose(matrix, fake.expected(TEXTS), atol=1e-6)

    def test_duplicate_indexes_are_a_bad_response(self, srv):
        fake = FakeEmbeddingAPI(self.dim)
        srv.always(PATH, lambda rec: reply_with(list(fake.expected(rec.body["input"])), rec, indexes=[0, 0, 1]))
        with pytest.raises(ProviderBadResponse, match="index"):
            self.make(srv.url + "/v1").embed_documents(TEXTS)

    def test_custom_model_on_a_compatible_endpoint(self, srv):
        srv.always(PATH, FakeEmbeddingAPI(768))
        embedder = self.make(srv.url + "/v1", model="nomic-embed-text", dim=768)
        assert embedder.embed_documents(TEXTS).shape == (3, 768)
        body = srv.requests_to(PATH)[0].body
        assert body["model"] == "nomic-embed-text" and "dimensions" not in body
        with pytest.raises(ValueError, match="pass dim"):
            self.make(srv.url + "/v1", model="nomic-embed-text")
