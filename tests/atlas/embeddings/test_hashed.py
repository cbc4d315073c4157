"""The default offline embedder: deterministic, normalised, of the dimension asked for."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from forum_atlas.embeddings import Embedder
from forum_atlas.embeddings.hashed import HashedEmbedder

TEXTS = [
    "Statins lower LDL cholesterol and reduce cardiovascular events.",
    "Aspirin reduces the risk of a second stroke.",
    "Ünïcode tëxt, numbers 42 and 3.14, MIXED case.",
]
DIGEST_SCRIPT = (
    "import hashlib, json, sys; from forum_atlas.embeddings.hashed import HashedEmbedder; "
    "texts = json.loads(sys.argv[1]); "
    "print(hashlib.sha256(HashedEmbedder(dim=384).embed_documents(texts).tobytes()).hexdigest())"
)


def test_vectors_are_identical_across_processes_with_different_hash_seeds():
    here = hashlib.sha256(HashedEmbedder(dim=384).embed_documents(TEXTS).tobytes()).hexdigest()
    for seed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT, json.dumps(TEXTS)], env=env,
                             capture_output=True, text=True, check=True)
        assert out.stdout.strip() == here


def test_vectors_are_unit_length_float32():
    matrix = HashedEmbedder(dim=384).embed_documents(TEXTS)
    assert matrix.dtype == np.float32 and matrix.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("dim", [8, 64, 384, 1024])
def test_dimension_is_the_one_asked_for_and_names_the_vector_space(dim):
    embedder = HashedEmbedder(dim=dim)
    assert embedder.embed_documents(TEXTS).shape == (3, dim)
    assert embedder.embed_query(TEXTS[0]).shape == (dim,)
    assert embedder.name == f"hashed-bow-v1@{dim}"
    assert isinstance(embedder, Embedder)


def test_too_few_dimensions_are_refused():
    with pytest.raises(ValueError, match="at least 8"):
        HashedEmbedder(dim=4)


def test_query_equals_document_and_shared_words_mean_closer_vectors():
    embedder = HashedEmbedder(dim=384)
    query = embedder.embed_query("cholesterol statins")
    np.testing.assert_array_equal(query, embedder.embed_documents(["cholesterol statins"])[0])
    docs = embedder.embed_documents(TEXTS[:2])
    assert docs[0] @ query > docs[1] @ query
    assert docs[0] @ query > 0.3


def test_case_and_stop_words_do_not_change_the_vector():
    embedder = HashedEmbedder(dim=384)
    a, b = embedder.embed_documents(["Statins LOWER cholesterol", "the statins lower the cholesterol"])
    np.testing.assert_allclose(a, b, atol=1e-7)
