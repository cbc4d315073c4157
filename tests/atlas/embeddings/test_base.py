"""The shared pieces every embedder relies on: input checks, batching, shape checks, the factory."""

from __future__ import annotations

import numpy as np
import pytest

from forum_atlas.embeddings import HashedEmbedder, make_embedder
from forum_atlas.embeddings.base import batched, check_texts, estimate_tokens, resolve_dim, unit_matrix
from forum_atlas.providers import ProviderBadResponse


def test_batches_respect_item_and_token_limits_and_keep_order():
    texts = ["x" * 150_000] * 5 + ["short"] * 3  # ~50k estimated tokens each, then tiny ones
    batches = list(batched(texts, max_items=4, max_tokens=120_000))
    assert [len(b) for b in batches] == [2, 2, 4]  # two long texts fill a budget; the fifth + 3 short fit
    assert [t for b in batches for t in b] == texts
    assert [len(b) for b in batched(["a"] * 10, max_items=4, max_tokens=10**6)] == [4, 4, 2]


def test_a_text_over_the_token_budget_travels_alone():
    texts = ["ok", "y" * 1_000_000, "ok"]
    assert [len(b) for b in batched(texts, max_items=100, max_tokens=1000)] == [1, 1, 1]


def test_token_estimate_errs_high_for_english():
    sentence = "Statins reduce cardiovascular events in patients with elevated cholesterol."
    assert estimate_tokens(sentence) >= len(sentence.split()) * 1.3  # BPE averages ~1.3 tokens per word


def test_check_texts():
    assert check_texts(("a", ""), allow_blank=True) == ["a", ""]
    with pytest.raises(ValueError, match="text 1 is blank"):
        check_texts(["a", "\n"], allow_blank=False)
    with pytest.raises(TypeError, match="text 0 is bytes"):
        check_texts([b"a"], allow_blank=True)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one string"):
        check_texts("abc", allow_blank=True)


def test_unit_matrix_normalises_and_checks_shape():
    matrix = unit_matrix("p", [[3.0, 4.0], [0.0, 2.0]], count=2, dim=2)
    np.testing.assert_allclose(matrix, [[0.6, 0.8], [0.0, 1.0]])
    assert matrix.dtype == np.float32
    for bad, message in [([[1.0, 2.0]], "expected 2 vectors"), ([[1.0], [2.0, 3.0]], "numeric matrix"),
                         ([["a", "b"], [1, 2]], "numeric matrix"), ([[1.0, float("inf")], [1, 2]], "infinite"),
                         ([[0.0, 0.0], [1, 2]], "all zeros"), (None, "expected 2 vectors")]:
        with pytest.raises(ProviderBadResponse, match=message):
            unit_matrix("p", bad, count=2, dim=2, attempts=3)


def test_resolve_dim():
    native = {"m": 1024}
    assert resolve_dim("m", None, native) == (1024, None)
    assert resolve_dim("m", 1024, native) == (1024, None)
    assert resolve_dim("m", 256, native) == (256, 256)
    assert resolve_dim("other", 768, native) == (768, None)
    with pytest.raises(ValueError, match="pass dim"):
        resolve_dim("other", None, native)
    with pytest.raises(ValueError, match="positive"):
        resolve_dim("m", 0, native)


def test_make_embedder_hashed_and_unknown_names():
    default = make_embedder("hashed")
    assert isinstance(default, HashedEmbedder) and default.dim == 384 and default.name == "hashed-bow-v1@384"
    assert make_embedder("hashed", dim=64).dim == 64
    with pytest.raises(TypeError):
        make_embedder("hashed", model="voyage-3")
    with pytest.raises(ValueError, match="choose onnx-minilm, hashed, minilm, voyage, openai"):
        make_embedder("bm25")
