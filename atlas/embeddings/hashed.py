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
from itertools import chain, count

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
        # Each text's distinct tokens in first-seen order, all texts in one flat sequence, and every pass over
        # it a loop in C (Counter, dict, map, numpy): a Python loop per (text, token) took ~1 s of a 10 MB
        # record's 1.4 M. np.add.at sums in that same order, so the vectors are bit for bit those of the loop.
        counts = [Counter(tokens(text)) for text in texts]
        keys = list(chain.from_iterable(counts))
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not keys:
            return matrix
        vocabulary = dict(zip(dict.fromkeys(keys), count()))
        ids = np.fromiter(map(vocabulary.__getitem__, keys), dtype=np.intp, count=len(keys))
        slots = [_slot(token, self.dim) for token in vocabulary]
        cols = np.array([index for index, _ in slots], dtype=np.intp)[ids]
        signs = np.array([sign for _, sign in slots])[ids]
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=np.intp, count=len(keys))
        rows = np.repeat(np.arange(len(texts)), [len(c) for c in counts])
        # Stop words only count in a text made of nothing else ("it was the"), which would
        # otherwise get a zero vector, whose cosine distance is undefined.
        content = ~np.array([token in _STOP for token in vocabulary], dtype=bool)[ids]
        keep = content | (np.bincount(rows[content], minlength=len(texts)) == 0)[rows]
        # 1 + ln(tf) from math.log, looked up: the doubles a per-token math.log gives.
        sublinear = np.array([1.0 + math.log(tf) for tf in range(1, int(tfs.max()) + 1)])
        np.add.at(matrix, (rows[keep], cols[keep]), (signs * sublinear[tfs - 1])[keep].astype(np.float32))
        return l2_normalise(matrix)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
