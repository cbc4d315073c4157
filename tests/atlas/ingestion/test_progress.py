"""Ingest progress (issue 36): the embedding is watched as it goes, and the counts say its rate and time left."""

import numpy as np
import pytest

from forum_atlas.embeddings import make_embedder
from forum_atlas.ingestion.preparation import EMBED_SLICE, PreparedBatch, StoredChunk, embed_chunks
from forum_atlas.ingestion.progress import IngestTally


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _batch(texts):
    return PreparedBatch([], [StoredChunk(i, text) for i, text in enumerate(texts)])


def test_a_watched_embedding_reports_each_slice_and_gives_the_same_vectors_in_order():
    texts = [f"passage {i} " + "word " * (i % 37) for i in range(2 * EMBED_SLICE + 17)]
    embedder = make_embedder("hashed")
    whole = embed_chunks(_batch(texts), embedder).stored_embeddings
    told = []
    sliced = embed_chunks(_batch(texts), embedder, told.append).stored_embeddings
    assert told == [EMBED_SLICE, EMBED_SLICE, 17]
    np.testing.assert_array_equal(sliced, whole)


def test_the_tally_scales_the_chunks_to_all_of_the_input_and_says_the_time_left():
    clock = Clock()
    tally = IngestTally(clock)
    tally.start(1000)
    tally.advance(250, 3)
    tally.plan(100)            # a quarter of the input made 100 chunks: ~400 in all
    assert tally.expected_chunks() == 400 and tally.rate() is None
    clock.now += 10
    tally.embed(50)
    assert tally.rate() == pytest.approx(5.0) and tally.seconds_left() == pytest.approx(70.0)
    tally.advance(1000, 9)
    tally.plan(200)            # all read: the chunks planned are all there are
    assert tally.expected_chunks() == 300
