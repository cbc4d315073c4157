"""VoyageEmbedder through the real `voyageai` SDK against a local server (see remote_contract)."""

from __future__ import annotations

from typing import Any

import pytest

from forum_atlas.embeddings.voyage import VoyageEmbedder
from forum_atlas.providers import ProviderRateLimited
from tests.atlas.embeddings.remote_contract import PATH, TEXTS, FakeEmbeddingAPI, RemoteEmbedderContract, error_body
from tests.support.wire import Reply


class TestVoyageEmbedder(RemoteEmbedderContract):
    provider = "voyage"
    model = "voyage-3"
    dim = 1024
    key_env = "VOYAGE_API_KEY"

    def make(self, srv_url: str, **options: Any) -> VoyageEmbedder:
        options.setdefault("retry_base_delay", 0.01)
        return VoyageEmbedder(api_key="test-key", base_url=srv_url, **options)

    def check_payload(self, body: dict[str, Any], input_type: str) -> None:
        assert body["input_type"] == input_type
        assert body["output_dimension"] is None  # voyage-3 has one size: ask for nothing else
        assert body["truncation"] is True

    def test_flexible_model_is_asked_for_a_shorter_vector(self, srv):
        srv.always(PATH, FakeEmbeddingAPI(512))
        embedder = self.make(srv.url + "/v1", model="voyage-3-large", dim=512)
        assert embedder.embed_documents(TEXTS).shape == (3, 512)
        assert srv.requests_to(PATH)[0].body["output_dimension"] == 512
        assert embedder.name == "voyage/voyage-3-large@512"

    def test_retry_after_beyond_the_limit_gives_up_at_once(self, srv):
        srv.always(PATH, Reply(429, error_body("quota exhausted"), {"Retry-After": "3600"}))
        with pytest.raises(ProviderRateLimited) as caught:
            self.make(srv.url + "/v1", max_retries=3).embed_documents(TEXTS)
        assert caught.value.attempts == 1 and caught.value.retry_after == 3600
        assert len(srv.requests_to(PATH)) == 1

    def test_unknown_model_needs_a_dimension(self):
        with pytest.raises(ValueError, match="pass dim"):
            VoyageEmbedder("voyage-99", api_key="k")
