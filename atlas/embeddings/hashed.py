"""Deterministic hashed bag-of-words embeddings: the offline default.

Signed feature hashing (Weinberger et al., 2009) of lower-cased word unigrams, sublinear term
frequency, L2-normalised. Hashes come from BLAKE2b, not Python's salted `hash()`, so vectors are
identical across processes and machines.
"""

from __future__ import annotations

import hashlib
import math
import string
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from forum_atlas.embeddings.base import l2_normalise

VERSION = "hashed-bow-v1"
# Tokens are the runs of [a-z0-9] in the lower-cased text. Found as bytes: every other character
# (each non-ASCII one first becomes "?") turns into a space, then split() — 3x faster than a regex
# findall on long texts, and the same tokens.
_TOKEN_BYTES = bytes(c if chr(c) in string.ascii_lowercase + string.digits else 32 for c in range(256))
_STOP = frozenset(
    b"a an and are as at be by for from has have in is it its of on or that the this to was were which with".split()
)


def tokens(text: str) -> list[bytes]:
    return text.lower().encode("ascii", "replace").translate(_TOKEN_BYTES).split()


@lru_cache(maxsize=1 << 18)
def _slot(token: bytes, dim: int) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(token, digest_size=8).digest(), "little")
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


class HashedEmbedder:
    engine = "hashed-bow"
    version = VERSION

    def __init__(self, dim: int = 384):
        if dim < 8:
            raise ValueError("hashed embeddings need at least 8 dimensions")
        self.dim = dim
        self.name = f"{VERSION}@{dim}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[int] = []
        cols: list[int] = []
        weights: list[float] = []
        dim = self.dim
        for i, text in enumerate(texts):
            counts = Counter(tokens(text))
            # Stop words only count in a text made of nothing else ("it was the"), which would
            # otherwise get a zero vector, whose cosine distance is undefined.
            content = {t: tf for t, tf in counts.items() if t not in _STOP} or counts
            for token, tf in content.items():
                index, sign = _slot(token, dim)
                rows.append(i)
                cols.append(index)
                weights.append(sign * (1.0 + math.log(tf)))
        matrix = np.zeros((len(texts), dim), dtype=np.float32)
        np.add.at(matrix, (np.asarray(rows, dtype=np.intp), np.asarray(cols, dtype=np.intp)),
                  np.asarray(weights, dtype=np.float32))
        return l2_normalise(matrix)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
