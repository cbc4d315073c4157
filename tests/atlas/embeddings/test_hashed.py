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


# Vectors already stored must keep their meaning: these digests are of the vectors the per-token loop of
# hashed-bow-v1 gave before its passes moved into C and numpy (stop-word-only, empty and repeated-token texts,
# and at dim 8 many tokens summed into one slot, where the order of the float32 sums shows).
STORED_TEXTS = TEXTS + ["", "it was the", "the the the of a", "   \n\t", "rates rates rates rates rise rise fall " * 7 + "Rates",
                        "Grid demand rose 3 percent; the grid operator said so."]
STORED_DIGESTS = {8: "9860a1ba7082f4dc27815227f5e5e60acf232b8a23d929f084e94395d980761d",
                  384: "067db195de612a3ab4d3502854348694e962b3ac8ea32001b378eb236a887360"}


@pytest.mark.parametrize("dim", sorted(STORED_DIGESTS))
def test_vectors_are_bit_for_bit_those_of_hashed_bow_v1(dim):
    matrix = HashedEmbedder(dim=dim).embed_documents(STORED_TEXTS)
    assert hashlib.sha256(matrix.tobytes()).hexdigest() == STORED_DIGESTS[dim]


def test_a_batch_embeds_each_text_as_alone():
    embedder = HashedEmbedder(dim=64)
    batch = embedder.embed_documents(STORED_TEXTS)
    for text, row in zip(STORED_TEXTS, batch):
        np.testing.assert_array_equal(embedder.embed_documents([text])[0], row)
    assert embedder.embed_documents([]).shape == (0, 64)
