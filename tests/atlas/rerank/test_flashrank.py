"""FlashRank with a model folder built here (no hub access): real tokenizer, real ONNX session."""

import json

import pytest

from forum_atlas.rerank import make_reranker
from forum_atlas.rerank.base import RerankerSetupError
from forum_atlas.rerank.flashrank import DEFAULT_MODEL, FlashRankReranker, required_files

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "insulin", "muscle", "solar", "panel", "therapy", "resistance"]


def build_model_folder(root, model_name=DEFAULT_MODEL):
    """A tiny cross-encoder: its logit is the number of times the word 'insulin' occurs in the pair."""
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    folder = root / model_name
    folder.mkdir(parents=True)
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512, "pad_token": "[PAD]"}))
    (folder / "special_tokens_map.json").write_text(json.dumps({"cls_token": "[CLS]", "sep_token": "[SEP]",
                                                                "pad_token": "[PAD]", "unk_token": "[UNK]"}))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node("Constant", [], ["target"], value=helper.make_tensor("t", TensorProto.INT64, [], [4])),
        helper.make_node("Equal", ["input_ids", "target"], ["hit"]),
        helper.make_node("Cast", ["hit"], ["hits"], to=TensorProto.FLOAT),
        helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("a", TensorProto.INT64, [1], [1])),
        helper.make_node("ReduceSum", ["hits", "axes"], ["logits"], keepdims=1),
    ]
    model = helper.make_model(helper.make_graph(nodes, "tiny-cross-encoder", inputs, [output]),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / required_files(model_name)[0]))
    return folder


def test_reranks_with_a_local_model_folder(tmp_path):
    build_model_folder(tmp_path)
    reranker = make_reranker("flashrank", model_dir=tmp_path)
    ranked = reranker.rerank("insulin", ["solar panel", "insulin insulin therapy", "muscle insulin resistance"])
    assert [i for i, _ in ranked] == [1, 2, 0]
    assert ranked[0][1] > ranked[1][1] > ranked[2][1]
    assert reranker.name == f"flashrank/{DEFAULT_MODEL}" and "flashrank" in reranker.version


def test_absent_model_is_a_clear_error_and_never_a_download(tmp_path):
    with pytest.raises(RerankerSetupError, match="not installed in .*missing flashrank-MiniLM-L-12-v2_Q.onnx"):
        FlashRankReranker(tmp_path)
    with pytest.raises(RerankerSetupError, match="ATLAS_RERANKER_MODEL_DIR"):
        FlashRankReranker(None)
    assert list(tmp_path.iterdir()) == []   # nothing fetched, nothing created
    folder = build_model_folder(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(RerankerSetupError, match="missing tokenizer.json"):
        FlashRankReranker(tmp_path)
