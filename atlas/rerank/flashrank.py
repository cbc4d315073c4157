"""FlashRank: a local ONNX cross-encoder (default `ms-marco-MiniLM-L-12-v2`).

FlashRank downloads a model zip from a model hub when its folder is missing. Forum Atlas never lets
it: the model must already sit in `<model_dir>/<model_name>/` (the ONNX file FlashRank's model list
names, plus config.json, tokenizer.json, tokenizer_config.json and special_tokens_map.json), and a
missing file is a `RerankerSetupError` that says which and where — at construction, before any query.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from forum_atlas.providers import ProviderBadResponse, ProviderUnavailable
from forum_atlas.rerank.base import RerankerSetupError

DEFAULT_MODEL = "ms-marco-MiniLM-L-12-v2"
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def required_files(model_name: str) -> tuple[str, ...]:
    from flashrank.Config import model_file_map

    if model_name not in model_file_map:
        raise RerankerSetupError(f"flashrank: unknown model {model_name!r}; known: {', '.join(sorted(model_file_map))}")
    return (model_file_map[model_name], *TOKENIZER_FILES)


class FlashRankReranker:
    engine = "flashrank-onnx"

    def __init__(self, model_dir: Path | str | None, model_name: str = DEFAULT_MODEL, *, max_length: int = 512):
        if model_dir is None:
            raise RerankerSetupError(
                "flashrank: no model directory configured; set ATLAS_RERANKER_MODEL_DIR to a folder holding "
                f"{model_name}/ (FlashRank's hub download is not available offline)")
        folder = Path(model_dir).expanduser() / model_name
        missing = [f for f in required_files(model_name) if not (folder / f).is_file()]
        if missing:
            raise RerankerSetupError(
                f"flashrank: model {model_name!r} is not installed in {folder} (missing {', '.join(missing)}); "
                "copy the model folder there — it is never downloaded at run time")
        from flashrank import Ranker

        try:
            self._ranker = Ranker(model_name=model_name, cache_dir=str(Path(model_dir).expanduser()),
                                  max_length=max_length, log_level="WARNING")
        except Exception as exc:  # onnxruntime/tokenizers reject a corrupt folder with assorted errors
            raise RerankerSetupError(f"flashrank: cannot load {folder}: {type(exc).__name__}: {exc}") from exc
        self.name = f"flashrank/{model_name}"
        self.version = f"{model_name}; flashrank {metadata.version('flashrank')}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[tuple[int, float]]:
        if not passages:
            return []
        from flashrank import RerankRequest

        try:
            ranked = self._ranker.rerank(RerankRequest(query=query, passages=[
                {"id": i, "text": text} for i, text in enumerate(passages)]))
        except Exception as exc:  # an inference failure inside onnxruntime
            raise ProviderUnavailable("flashrank", f"inference failed: {type(exc).__name__}: {exc}") from exc
        result = [(int(p["id"]), float(p["score"])) for p in ranked]
        if sorted(i for i, _ in result) != list(range(len(passages))):
            raise ProviderBadResponse("flashrank", "the ranking does not cover every passage exactly once")
        return result
