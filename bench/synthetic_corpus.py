"""A synthetic corpus with a realistic Zipfian vocabulary, for retrieval speed benchmarks.

Words follow Zipf's law (exponent 1) over a vocabulary whose most frequent ranks are PostgreSQL's
English stop words mixed with the commonest content words, as in real English text: the analyzer
removes the stop words (~40 % of tokens), and the surviving content terms have a
document-frequency profile close to SciFact's (a few dozen terms in 20–50 % of documents, a long
tail in one). Content words are pronounceable
pseudo-words, so stemming leaves them distinct. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import numpy as np

from forum_atlas.ingestion.records import Record, SourceInfo

# PostgreSQL's `english` stop-word list (tsearch_data/english.stop), most frequent English words first.
STOP_WORDS = (
    "the of and to a in is that for it as was with be by on not he i this are or his from at which but "
    "have an they you were her she there been all we their has when if so no will more can who out about "
    "some them up into other then than its only these do my any very after most over such where "
    "before should through our down same being both each few further here how just me myself now off once "
    "own those too under until what why while again against am because between did does doing during "
    "having him himself herself itself nor ours ourselves theirs themselves above below yours yourself "
    "yourselves whom hers had your s t don"
).split()
SECTORS = ("health", "energy", "finance", "defence", "climate")
SECTOR_SHARES = (0.55, 0.25, 0.12, 0.07, 0.01)   # the last one makes a selective filter
EPOCH = datetime(2015, 1, 1, tzinfo=timezone.utc)
SPAN_DAYS = 3650

SYNTHETIC_SOURCE = SourceInfo(name="synthetic benchmark corpus", importance=3, quality_score=3,
                              licence="generated; no rights reserved", sector="general")


def content_words(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    stop = set(STOP_WORDS)
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        word += rng.choice(consonants)
        if word not in seen and word not in stop:
            seen.add(word)
            words.append(word)
    return words


class SyntheticCorpus:
    def __init__(self, size: int, *, seed: int = 7, vocabulary: int = 60_000, mean_words: int = 250,
                 exponent: float = 1.0):
        self.size = size
        self.seed = seed
        self.mean_words = mean_words
        self.exponent = exponent
        stops = list(dict.fromkeys(STOP_WORDS))
        content = content_words(vocabulary - len(stops), seed)
        # As in English, the 30 most frequent words are function words and the next ranks mix
        # function words with the most common content words.
        mixed = [w for pair in zip(stops[30:], content) for w in pair]
        tail = len(stops) - 30
        self.words = stops[:30] + mixed + content[tail:]
        self.stop_words = frozenset(stops)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = ranks ** -self.exponent
        self.cumulative = np.cumsum(weights / weights.sum())

    def _length(self, rng: np.random.Generator) -> int:
        return int(np.clip(rng.lognormal(np.log(self.mean_words), 0.35), 20, 4 * self.mean_words))

    def _document_words(self, rng: np.random.Generator) -> np.ndarray:
        return np.searchsorted(self.cumulative, rng.random(self._length(rng)), side="right").clip(0, len(self.words) - 1)

    def texts(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str]]:
        """Documents start..stop-1 (default: all), the same as in a full pass: the skipped ones'
        random draws are consumed without building their text, so resuming a 1M load at 900k
        costs seconds, not the generation of 900k documents."""
        rng = np.random.default_rng(self.seed)
        for _ in range(start):
            rng.random(self._length(rng))
        for i in range(start, self.size if stop is None else min(stop, self.size)):
            yield i, " ".join(self.words[w] for w in self._document_words(rng))

    def records(self, batch_size: int = 1000, start: int = 0, stop: int | None = None) -> Iterator[list[Record]]:
        meta = np.random.default_rng(self.seed + 1)
        meta.random(2 * start)  # two draws per document below: sector and date
        batch: list[Record] = []
        for i, text in self.texts(start, stop):
            sector = SECTORS[int(np.searchsorted(np.cumsum(SECTOR_SHARES), meta.random(), side="right").clip(0, 4))]
            published = EPOCH + timedelta(days=float(meta.random() * SPAN_DAYS))
            batch.append(Record(external_id=f"syn-{i}", title=f"Synthetic document {i}", text=text,
                                source=SYNTHETIC_SOURCE, published_at=published, sector=sector))
            if len(batch) == batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    def queries(self, count: int, terms: int = 6, seed: int = 11) -> list[str]:
        """Claim-like queries: `terms` distinct content words of one random document each."""
        rng = np.random.default_rng(seed)
        out: list[str] = []
        while len(out) < count:
            words = {w for w in self._document_words(rng).tolist() if self.words[w] not in self.stop_words}
            if len(words) >= terms:
                picked = rng.choice(sorted(words), size=terms, replace=False)
                out.append(" ".join(self.words[w] for w in picked))
        return out
