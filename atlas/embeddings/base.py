"""The embedding interface every provider implements."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from forum_atlas.providers import ProviderBadResponse, ProviderError, ProviderOutcome, observed


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length float32 vectors of a fixed dimension.

    `name` identifies the vector space in the database (two embedders with the same name must
    produce comparable vectors); `engine` and `version` go into evidence snapshots.
    """

    name: str
    engine: str
    version: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


@dataclass
class EmbedStats:
    """Where a local embedder's time went since it was built (cumulative, per instance)."""

    texts: int = 0
    windows: int = 0
    tokens: int = 0             # real tokens, special tokens included
    padded_tokens: int = 0      # tokens the model computed, padding included
    seconds: float = 0.0        # inside embed_documents / embed_query
    model_seconds: float = 0.0  # inside the model itself (e.g. InferenceSession.run)

    def snapshot(self) -> dict:
        return asdict(self)


def stats_of(embedder: Embedder) -> dict | None:
    """The embedder's cumulative `EmbedStats` now, or None for one that keeps none (hashed, remote APIs)."""
    stats = getattr(embedder, "stats", None)
    return stats.snapshot() if isinstance(stats, EmbedStats) else None


def embed_report(before: dict | None, after: dict | None, run_seconds: float) -> dict:
    """A run's embedding time and the model's share of it, from `stats_of` at the run's start and end
    ({} when the embedder keeps no stats). Other work embedding with the same instance meanwhile counts too."""
    if before is None or after is None:
        return {}
    seconds = after["seconds"] - before["seconds"]
    model = after["model_seconds"] - before["model_seconds"]
    padded = after["padded_tokens"] - before["padded_tokens"]
    return {
        "embed_seconds": round(seconds, 2),
        "embed_model_seconds": round(model, 2),
        "embed_model_share_of_embed": round(model / seconds, 3) if seconds else 0.0,
        "embed_model_share_of_run": round(model / run_seconds, 3) if run_seconds else 0.0,
        "embed_padding_share": round(1 - (after["tokens"] - before["tokens"]) / padded, 3) if padded else 0.0,
    }


class EmbedderSetupError(RuntimeError):
    """The embedder cannot be built as configured (missing package, model folder or API key).

    Raised when the embedder is constructed, before any text is sent; the message names the fix.
    """


InputType = Literal["document", "query"]


def check_texts(texts: Sequence[str], *, allow_blank: bool) -> list[str]:
    """The texts as a list, or a clear error: a bare string would otherwise be embedded letter by
    letter, and remote APIs reject blank inputs with an opaque 400."""
    if isinstance(texts, str):
        raise TypeError("embed_documents takes a sequence of texts, not one string")
    checked = list(texts)
    for position, text in enumerate(checked):
        if not isinstance(text, str):
            raise TypeError(f"text {position} is {type(text).__name__}, not str")
        if not allow_blank and not text.strip():
            raise ValueError(f"text {position} is blank: this embedding API rejects empty input")
    return checked


def estimate_tokens(text: str) -> int:
    """An upper estimate of a text's token count without the provider's tokenizer (which would be a
    download): BPE tokenizers average ~4 characters per English token, so 3 leaves headroom."""
    return len(text) // 3 + 1


def batched(texts: Sequence[str], *, max_items: int, max_tokens: int) -> Iterator[list[str]]:
    """Consecutive batches holding at most `max_items` texts and about `max_tokens` tokens; a single
    text over the token budget travels alone (the API truncates or rejects it, with a typed error)."""
    batch: list[str] = []
    tokens = 0
    for text in texts:
        cost = estimate_tokens(text)
        if batch and (len(batch) == max_items or tokens + cost > max_tokens):
            yield batch
            batch, tokens = [], 0
        batch.append(text)
        tokens += cost
    if batch:
        yield batch


def unit_matrix(provider: str, vectors: object, *, count: int, dim: int, attempts: int = 1) -> np.ndarray:
    """A provider's vectors as a unit-length float32 matrix, after checking they are what was asked
    for: `count` finite, non-zero vectors of `dim` numbers. Anything else is a bad response, never
    a silently short or padded result."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ProviderBadResponse(provider, f"embeddings are not a numeric matrix ({exc})", attempts=attempts) from None
    if matrix.shape != (count, dim):
        raise ProviderBadResponse(
            provider, f"expected {count} vectors of {dim} dimensions, got shape {matrix.shape}", attempts=attempts
        )
    if not np.isfinite(matrix).all():
        raise ProviderBadResponse(provider, "embeddings contain NaN or infinite values", attempts=attempts)
    if not np.linalg.norm(matrix, axis=1).all():
        raise ProviderBadResponse(provider, "an embedding is all zeros (no direction to compare)", attempts=attempts)
    return l2_normalise(matrix)


def resolve_dim(model: str, dim: int | None, native_dims: dict[str, int]) -> tuple[int, int | None]:
    """(dimension of the vectors, dimension to request from the API or None for the model's own).

    A known model gets its native dimension unless `dim` asks for a shorter one; an unknown model
    needs `dim`, which is then taken as its native dimension (the shape check catches a wrong guess).
    """
    native = native_dims.get(model)
    if dim is None:
        if native is None:
            raise ValueError(f"unknown dimension for model {model!r}: pass dim (known: {sorted(native_dims)})")
        return native, None
    if dim < 1:
        raise ValueError(f"dim must be positive, got {dim}")
    return dim, (dim if native is not None and dim != native else None)


def api_key_from(value: str | None, env_var: str, provider: str) -> str:
    key = value or os.environ.get(env_var)
    if not key:
        raise EmbedderSetupError(
            f"{provider}: no API key: set {env_var} or pass api_key "
            "(the default `hashed` embedder needs none)"
        )
    return key


class RemoteEmbedder:
    """The shared body of the API embedders: input checks, batching within the API's limits, one
    typed `ProviderOutcome` per request (handed to `on_outcome`, e.g. for the audit log) and a shape
    check on every reply. A subclass sets the class attributes and implements `_request`."""

    provider: str
    engine: str
    max_items: int  # texts per request the API accepts
    max_tokens: int  # tokens per request the API accepts

    def __init__(self, *, model: str, dim: int, version: str, batch_size: int | None,
                 on_outcome: Callable[[ProviderOutcome], None] | None):
        if batch_size is not None and not 1 <= batch_size <= self.max_items:
            raise ValueError(f"batch_size must be between 1 and {self.max_items} for {self.provider}")
        self.model = model
        self.dim = dim
        self.name = f"{self.provider}/{model}@{dim}"
        self.version = version
        self.batch_size = batch_size or self.max_items
        self.on_outcome = on_outcome

    def _request(self, batch: list[str], input_type: InputType) -> tuple[object, int]:
        """Send one batch; return (the vectors as the SDK gave them, attempts made). Raises only
        `ProviderError`s."""
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]

    def _embed(self, texts: Sequence[str], input_type: InputType) -> np.ndarray:
        checked = check_texts(texts, allow_blank=False)
        if not checked:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = batched(checked, max_items=self.batch_size, max_tokens=self.max_tokens)
        return np.vstack([self._embed_batch(batch, input_type) for batch in batches])

    def _embed_batch(self, batch: list[str], input_type: InputType) -> np.ndarray:
        try:
            with observed(self.provider, "embed") as outcome:
                outcome.extra.update(model=self.model, texts=len(batch), input_type=input_type)
                vectors, outcome.attempts = self._request(batch, input_type)
                matrix = unit_matrix(self.provider, vectors, count=len(batch), dim=self.dim,
                                     attempts=outcome.attempts)
        except ProviderError:
            self._report(outcome)
            raise
        self._report(outcome)
        return matrix

    def _report(self, outcome: ProviderOutcome) -> None:
        if self.on_outcome is not None:
            self.on_outcome(outcome)
