"""The C kernel's MaxScore pruning (sql/native/bm25_top_k.c) never drops a true top-k chunk: on random
corpora built so that pruning sets in (rare terms with high bounds, common terms with long posting
lists) and full of exact ties (duplicated chunks), with and without filters, the kernel returns the same
rows as a brute-force BM25 over the forward index (bit for bit: same summation order) and as the PL/pgSQL
MaxScore search (scores to 1e-12), and its DEBUG trace shows that it did prune, both ways."""

from __future__ import annotations

import random
import re

import pytest
from psycopg.rows import dict_row

from forum_atlas.runtime import kernel_build
from forum_atlas.store import native
from tests.support.corpus import ingest, record

pytestmark = pytest.mark.skipif(kernel_build.find_compiler() is None, reason="no C compiler: the kernel cannot be built here")

K1, B = 1.5, 0.75
TRACE = re.compile(r"bm25_native_top_k: (\d+) of (\d+) terms read in full, (\d+) for survivors only, (\d+) from the forward index")
RARE = [f"zor{c}" for c in "bcdfghjk"]        # in ~2 % of the chunks each: high bounds, read first
MIDDLE = [f"vel{c}" for c in "bcdfghjk"]      # ~20 %
COMMON = [f"tam{c}" for c in "bcdf"]          # ~70 %: the long lists pruning skips
FILLER = [f"pux{c}{d}" for c in "bcdfg" for d in "aeiou"]


def random_corpus(rng: random.Random, size: int) -> list[tuple[str, str]]:
    """(text, sector) per chunk; a fifth are copies of an earlier chunk (exact score ties)."""
    chunks: list[tuple[str, str]] = []
    for _ in range(size):
        if chunks and rng.random() < 0.2:
            chunks.append(rng.choice(chunks))
            continue
        words = []
        for vocabulary, share in ((RARE, 0.02), (MIDDLE, 0.2), (COMMON, 0.7)):
            for word in vocabulary:
                if rng.random() < share:
                    words += [word] * rng.choice((1, 1, 1, 2, 3))
        words += rng.choices(FILLER, k=rng.randint(0, 12))
        rng.shuffle(words)
        chunks.append((" ".join(words) or "puxba", rng.choice(("alpha", "alpha", "beta", "gamma" if rng.random() < 0.1 else "beta"))))
    return chunks


def random_query(rng: random.Random) -> str:
    return " ".join(rng.sample(RARE, rng.randint(0, 2)) + rng.sample(MIDDLE, rng.randint(0, 2))
                    + rng.sample(COMMON, rng.randint(1, 3)))


def brute_force(conn, query: str, k: int, allowed: list[int] | None) -> list[tuple[int, float]]:
    """Every chunk scored from its forward-index row, the query's terms summed left to right in the
    order the searches read them (forum.bm25_query_weights), with the kernel's expression."""
    stats = conn.execute("SELECT token_total::float8 / chunk_count AS avgdl FROM forum.bm25_stats").fetchone()
    w = conn.execute("SELECT * FROM forum.bm25_query_weights(%s, %s, %s, %s, 0.25)",
                     (query, stats["avgdl"], K1, B)).fetchone()
    if w["terms"] is None:
        return []
    admitted = None if allowed is None else set(allowed)
    scored = []
    for row in conn.execute("SELECT chunk_id, doc_len, terms, tfs FROM forum.bm25_forward"):
        if admitted is not None and row["chunk_id"] not in admitted:
            continue
        tf_of = dict(zip(row["terms"], row["tfs"]))
        score, found = 0.0, False
        for term, weight in zip(w["terms"], w["weights"]):
            if term in tf_of:
                tf = tf_of[term]
                score += weight * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * row["doc_len"] / stats["avgdl"])))
                found = True
        if found:
            scored.append((row["chunk_id"], score))
    scored.sort(key=lambda hit: (-hit[1], hit[0]))
    return scored[:k]


def kernel(conn, query: str, k: int, allowed: list[int] | None) -> list[tuple[int, float]]:
    """forum.bm25_native_top_k called directly (not through forum.bm25_search, which would answer
    from the PL/pgSQL search if the kernel failed to load)."""
    rows = conn.execute(
        """SELECT n.chunk_id, n.score
             FROM forum.bm25_stats s, forum.bm25_query_weights(%s, s.token_total::float8 / s.chunk_count, %s, %s, 0.25) w,
                  forum.bm25_native_top_k(w.terms, w.weights, w.bounds, w.dfs, %s, %s, %s,
                                          s.token_total::float8 / s.chunk_count, %s::bigint[]) n
            WHERE w.terms IS NOT NULL""", (query, K1, B, k, K1, B, allowed)).fetchall()
    return [(r["chunk_id"], r["score"]) for r in rows]


def search(conn, function: str, query: str, k: int, sectors: list[str] | None) -> list[tuple[int, float]]:
    rows = conn.execute(f"SELECT chunk_id, score, rank FROM {function}(%s, %s, %s::text[])", (query, k, sectors)).fetchall()
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    return [(r["chunk_id"], r["score"]) for r in rows]


def assert_same_up_to_rounding(got, expected, true_scores: dict[int, float]) -> None:
    """The PL/pgSQL search sums a chunk's contributions in an order of its executor's choosing: chunks
    whose scores are equal in exact arithmetic (the same contributions, differently arranged) may differ
    in the last bit and swap. Anything else must be the same."""
    assert len(got) == len(expected) and len({hit[0] for hit in got}) == len(got)
    assert [hit[1] for hit in got] == pytest.approx([hit[1] for hit in expected], rel=1e-12)
    for (got_id, _), (expected_id, expected_score) in zip(got, expected):
        assert got_id == expected_id or true_scores[got_id] == pytest.approx(expected_score, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pruning_keeps_every_true_top_k_result(db, seed):
    rng = random.Random(seed)
    chunks = random_corpus(rng, 1500)
    ingest(db, [record(str(i), text, sector=sector) for i, (text, sector) in enumerate(chunks)])
    if seed == 3:  # also on compacted postings (blocks of up to 1,024, as a bulk load leaves them)
        with db.connection() as conn:
            conn.execute("SELECT * FROM forum.bm25_compact()")
    trace: list[str] = []
    with db.connection() as conn:
        conn.row_factory = dict_row
        assert native.engine(conn).startswith("C kernel atlas_bm25_")
        conn.add_notice_handler(lambda notice: trace.append(notice.message_primary))
        conn.execute("SET client_min_messages = debug1")
        for _ in range(40):
            query, k = random_query(rng), rng.choice((1, 3, 10, 20))
            for sectors in (None, ["gamma"], ["alpha", "gamma"]):
                allowed = None if sectors is None else conn.execute(
                    "SELECT forum.filtered_chunk_ids(%s, NULL, NULL) AS ids", (sectors,)).fetchone()["ids"]
                every = brute_force(conn, query, 10**6, allowed)
                expected = every[:k]
                assert kernel(conn, query, k, allowed) == expected, (query, k, sectors)
                assert search(conn, "forum.bm25_search", query, k, sectors) == expected
                assert_same_up_to_rounding(search(conn, "forum.bm25_search_maxscore", query, k, sectors), expected,
                                           dict(every))
    # (terms read in full, query terms, for survivors only, from the forward index) per kernel call
    reads = [tuple(int(n) for n in match.groups()) for line in trace if (match := TRACE.match(line))]
    assert len(reads) >= 40 * 3 * 2
    assert any(forward for _, _, _, forward in reads)                      # pruned, completed from forward rows
    assert any(survivors for _, _, survivors, _ in reads)                  # pruned, later terms for survivors
    assert any(full == terms > 1 for full, terms, _, _ in reads)           # nothing to prune

