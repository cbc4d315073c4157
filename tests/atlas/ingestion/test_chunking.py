import random

import pytest

from forum_atlas.ingestion.chunking import Chunk, ChunkingOptions, chunk_key, chunk_text

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _random_text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(1, 40)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 60))]
        sentences.append(" ".join(words).capitalize() + rng.choice([".", "!", "?", "."]))
    separators = [" ", "  ", "\n", "\n\n", " \t "]
    return "".join(s + rng.choice(separators) for s in sentences)


@pytest.mark.parametrize("seed", range(40))
def test_offsets_slice_the_document_back_to_each_chunk(seed):
    rng = random.Random(seed)
    text = _random_text(rng)
    options = ChunkingOptions(max_chars=rng.choice([60, 200, 500]), overlap_chars=rng.choice([0, 20]))
    chunks = chunk_text(text, options)
    assert chunks, "non-empty text yields at least one chunk"
    for chunk in chunks:
        assert text[chunk.start:chunk.end] == chunk.text
        assert len(chunk.text) <= options.max_chars
        assert chunk.text == chunk.text.strip()
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert all(b.start > a.start for a, b in zip(chunks, chunks[1:])), "chunks always move forward"
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace()), "no text is dropped"


def test_same_input_gives_same_chunks_and_ids():
    text = _random_text(random.Random(7))
    first, second = chunk_text(text), chunk_text(text)
    assert first == second
    keys = [chunk_key("src", "doc-1", "ab" * 32, c) for c in first]
    assert keys == [chunk_key("src", "doc-1", "ab" * 32, c) for c in second]
    assert len(set(keys)) == len(keys)
    assert chunk_key("src", "doc-2", "ab" * 32, first[0]) != keys[0]


def test_sentences_are_kept_whole_and_overlap_repeats_trailing_sentences():
    text = "One short sentence. Two short sentence. Three short sentence. Four short sentence."
    chunks = chunk_text(text, ChunkingOptions(max_chars=60, overlap_chars=25))
    assert [c.text for c in chunks] == [
        "One short sentence. Two short sentence.",
        "Two short sentence. Three short sentence.",
        "Three short sentence. Four short sentence.",
    ]


def test_a_sentence_longer_than_the_limit_is_cut_at_whitespace():
    text = "word " * 100
    chunks = chunk_text(text.strip(), ChunkingOptions(max_chars=60, overlap_chars=0))
    assert all(len(c.text) <= 60 and not c.text.startswith(" ") for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()


@pytest.mark.parametrize("kwargs", [{"max_chars": 10}, {"max_chars": 100, "overlap_chars": 60}, {"overlap_chars": -1}])
def test_nonsensical_options_are_refused(kwargs):
    with pytest.raises(ValueError):
        ChunkingOptions(**kwargs)


def test_whitespace_only_text_has_no_chunks():
    assert chunk_text("   \n\n  ") == []
    assert isinstance(chunk_text("x")[0], Chunk)
