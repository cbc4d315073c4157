"""RET-1: BM25 in PostgreSQL equals rank_bm25.BM25Okapi, and its index follows ingestion exactly.

Every search test runs against both engines behind `forum.bm25_search`: the native C kernel
(store/native.py) and the PL/pgSQL MaxScore search it falls back to.
"""

from __future__ import annotations

import math

import pytest
from rank_bm25 import BM25Okapi

from forum_atlas.runtime import kernel_build
from forum_atlas.store import native
from forum_atlas.store.db import Database
from forum_atlas.store.documents import compact_bm25_postings
from tests.conftest import _fresh_database
from tests.support.corpus import bm25_corpus, ingest, query_tokens, record, scifact_queries, scifact_records

SCIFACT_DOCS = 1200


@pytest.fixture(params=["native kernel", "plpgsql"])
def search(request):
    """`search(conn, text, k, **filters)` through one engine."""
    if request.param == "native kernel" and kernel_build.find_compiler() is None:
        pytest.skip("no C compiler here: the native kernel cannot be built (the PL/pgSQL search serves BM25)")
    function = "forum.bm25_search" if request.param == "native kernel" else "forum.bm25_search_maxscore"

    def run(conn, text: str, k: int = 10, **filters):
        if request.param == "native kernel":
            assert native.engine(conn).startswith("C kernel atlas_bm25_")
        return conn.execute(
            f"SELECT chunk_id, score, rank FROM {function}(%s, %s, %s::text[], %s::timestamptz, %s::timestamptz)",
            (text, k, filters.get("sectors"), filters.get("after"), filters.get("before"))).fetchall()
    return run


def expected_top(conn, text: str, k: int = 10) -> tuple[list[tuple[int, float]], BM25Okapi]:
    ids, corpus = bm25_corpus(conn)
    oracle = BM25Okapi(corpus)
    scores = oracle.get_scores(query_tokens(conn, text))
    matching = [i for i, doc in enumerate(corpus) if set(doc) & set(query_tokens(conn, text))]
    order = sorted(matching, key=lambda i: (-scores[i], ids[i]))[:k]
    return [(ids[i], float(scores[i])) for i in order], oracle


def assert_same_ranking(got, expected):
    assert [r["chunk_id"] for r in got] == [e[0] for e in expected]
    assert [r["rank"] for r in got] == list(range(1, len(expected) + 1))
    for row, (_, score) in zip(got, expected):
        assert row["score"] == pytest.approx(score, rel=1e-9, abs=1e-12)


def assert_index_matches_chunks(conn) -> None:
    """Every statistic the triggers maintain equals a recomputation from the searchable chunks."""
    stats = conn.execute("SELECT chunk_count, token_total FROM forum.bm25_stats").fetchone()
    truth = conn.execute("SELECT count(*) AS n, coalesce(sum(token_count), 0) AS t FROM forum.chunks WHERE searchable").fetchone()
    assert (stats["chunk_count"], stats["token_total"]) == (truth["n"], truth["t"])
    postings = conn.execute(
        """SELECT b.term, e.id, e.tf, e.len FROM forum.bm25_postings b,
                  unnest(b.chunk_ids, b.tfs, b.doc_lens) e(id, tf, len) ORDER BY 1, 2""").fetchall()
    expected = conn.execute(
        """SELECT u.lexeme COLLATE "C" AS term, c.chunk_id AS id, coalesce(array_length(u.positions, 1), 1) AS tf,
                  c.token_count AS len
             FROM forum.chunks c, unnest(c.lexemes) u WHERE c.searchable ORDER BY 1, 2""").fetchall()
    assert postings == expected
    df = conn.execute("SELECT term, df FROM forum.bm25_terms ORDER BY term").fetchall()
    expected_df = conn.execute(
        """SELECT u.lexeme COLLATE "C" AS term, count(*)::int AS df FROM forum.chunks c, unnest(c.lexemes) u
            WHERE c.searchable GROUP BY 1 ORDER BY 1""").fetchall()
    assert df == expected_df
    histogram = conn.execute("SELECT df, terms FROM forum.bm25_df_counts ORDER BY df").fetchall()
    expected_histogram = conn.execute(
        "SELECT df, count(*) AS terms FROM forum.bm25_terms GROUP BY df ORDER BY df").fetchall()
    assert histogram == expected_histogram
    forward = conn.execute(
        """SELECT f.chunk_id, t.term, t.tf, f.doc_len FROM forum.bm25_forward f,
                  unnest(f.terms, f.tfs) t(term, tf) ORDER BY 2, 1""").fetchall()
    assert [(r["term"], r["chunk_id"], r["tf"], r["doc_len"]) for r in forward] == [
        (r["term"], r["id"], r["tf"], r["len"]) for r in expected]
    blocks = conn.execute(
        """SELECT count(*) AS bad FROM forum.bm25_postings
            WHERE first_chunk <> (SELECT min(x) FROM unnest(chunk_ids) x)
               OR last_chunk <> (SELECT max(x) FROM unnest(chunk_ids) x) OR cardinality(chunk_ids) = 0""").fetchone()
    assert blocks["bad"] == 0


@pytest.fixture(scope="module", params=["as ingested", "compacted"])
def scifact_db(request, pg_server_url, shared_data, tmp_path_factory):
    """1,200 SciFact abstracts in three ingest transactions (statistics add up across them), with
    the posting blocks as the transactions wrote them, or merged by forum.bm25_compact."""
    from forum_atlas.config import Settings

    settings = Settings(database_url=_fresh_database(pg_server_url), data_dir=tmp_path_factory.mktemp("bm25"))
    database = Database.open(settings)
    records = scifact_records(shared_data, SCIFACT_DOCS)
    for start in range(0, len(records), 400):
        ingest(database, records[start:start + 400])
    if request.param == "compacted":
        compaction = compact_bm25_postings(database)
        assert compaction.blocks_written < compaction.blocks_merged
    yield database
    database.close()


def test_scores_equal_rank_bm25_on_scifact(scifact_db, shared_data, search):
    queries = scifact_queries(shared_data)[:50]
    with scifact_db.connection() as conn:
        ids, corpus = bm25_corpus(conn)
        assert len(ids) == SCIFACT_DOCS
        oracle = BM25Okapi(corpus)
        worst = 0.0
        for _, text in queries:
            tokens = query_tokens(conn, text)
            scores = oracle.get_scores(tokens)
            got = search(conn, text, 10)
            matching = [i for i, doc in enumerate(corpus) if set(doc) & set(tokens)]
            order = sorted(matching, key=lambda i: (-scores[i], ids[i]))[:10]
            assert [r["chunk_id"] for r in got] == [ids[i] for i in order], text
            for row, i in zip(got, order):
                worst = max(worst, abs(row["score"] - scores[i]) / abs(scores[i]))
        assert worst < 1e-9


def test_full_ranking_matches_beyond_the_pruned_top(scifact_db, shared_data, search):
    """k = 500 exercises the path that reads every posting list (no pruning possible)."""
    _, text = scifact_queries(shared_data)[7]
    with scifact_db.connection() as conn:
        expected, _ = expected_top(conn, text, 500)
        assert_same_ranking(search(conn, text, 500), expected)


def test_index_statistics_equal_a_recomputation(scifact_db):
    with scifact_db.connection() as conn:
        assert_index_matches_chunks(conn)


def block_sizes(conn, term: str) -> list[int]:
    return [r["n"] for r in conn.execute(
        "SELECT cardinality(chunk_ids) AS n FROM forum.bm25_postings WHERE term = %s ORDER BY first_chunk", (term,))]


def test_compaction_merges_small_blocks_in_chunk_order(scifact_db):
    with scifact_db.connection() as conn:
        common = conn.execute("SELECT term FROM forum.bm25_terms ORDER BY df DESC LIMIT 1").fetchone()["term"]
        df = conn.execute("SELECT df FROM forum.bm25_terms WHERE term = %s", (common,)).fetchone()["df"]
        sizes = block_sizes(conn, common)
        assert sum(sizes) == df
        layout = conn.execute(
            """SELECT max(t.small) AS most_small_blocks, bool_and(t.sorted) AS sorted
                 FROM (SELECT count(*) FILTER (WHERE cardinality(chunk_ids) < 512) AS small,
                              bool_and(chunk_ids = (SELECT array_agg(x ORDER BY x) FROM unnest(chunk_ids) x)) AS sorted
                         FROM forum.bm25_postings GROUP BY term) t""").fetchone()
        if len(sizes) == 3:  # as ingested: one block per ingest transaction
            assert layout["most_small_blocks"] == 3
        else:                # compacted: full blocks of 1,024, then the remainder; each in chunk order
            assert sizes == [1024] * (df // 1024) + ([df % 1024] if df % 1024 else [])
            assert layout["most_small_blocks"] == 1 and layout["sorted"]
            assert compact_bm25_postings(scifact_db).blocks_merged == 0  # nothing left to merge


def test_writes_after_compaction_keep_the_index_exact(db, search):
    text = lambda n, i: f"insulin muscle cells {n} trial {i} " + "exercise " * (i % 3)  # noqa: E731
    for n in range(3):
        ingest(db, [record(f"{n}-{i}", text(n, i)) for i in range(400)])
    with db.connection() as conn:
        before = search(conn, "insulin exercise", 100)
        assert block_sizes(conn, "insulin") == [400, 400, 400]
    compaction = compact_bm25_postings(db)
    assert compaction.blocks_written < compaction.blocks_merged
    with db.connection() as conn:
        assert block_sizes(conn, "insulin") == [1024, 176]
        assert_index_matches_chunks(conn)
        assert search(conn, "insulin exercise", 100) == before
    # A retraction rewrites a merged block; a new batch adds a small one; a second merge folds it in.
    ingest(db, [record("1-4", text(1, 4), retracted=True)])
    ingest(db, [record("late", "insulin and exercise, late")])
    with db.connection() as conn:
        assert block_sizes(conn, "insulin") == [1023, 176, 1]
        assert_index_matches_chunks(conn)
        expected, _ = expected_top(conn, "insulin exercise", 100)
        assert_same_ranking(search(conn, "insulin exercise", 100), expected)
    compact_bm25_postings(db)
    with db.connection() as conn:
        assert block_sizes(conn, "insulin") == [1023, 177]
        assert_index_matches_chunks(conn)
        assert_same_ranking(search(conn, "insulin exercise", 100), expected)


def test_incremental_ingest_retraction_and_new_versions(db, search):
    ingest(db, [record("a", "Insulin resistance in muscle cells. Insulin signalling fails."),
                record("b", "Muscle repair after exercise needs protein."),
                record("c", "Cells divide; cells die; muscle cells regenerate slowly.")])
    with db.connection() as conn:
        assert_index_matches_chunks(conn)
        expected, _ = expected_top(conn, "insulin muscle cells")
        assert_same_ranking(search(conn, "insulin muscle cells"), expected)

    ingest(db, [record("d", "Insulin therapy and insulin pumps."), record("e", "Nothing relevant here at all.")])
    with db.connection() as conn:
        assert_index_matches_chunks(conn)
        expected, _ = expected_top(conn, "insulin muscle cells")
        assert_same_ranking(search(conn, "insulin muscle cells"), expected)
        assert conn.execute("SELECT chunk_count FROM forum.bm25_stats").fetchone()["chunk_count"] == 5

    # Retraction (ING-6): the chunk leaves postings and statistics in the same transaction.
    ingest(db, [record("d", "Insulin therapy and insulin pumps.", retracted=True)])
    with db.connection() as conn:
        retracted = conn.execute(
            "SELECT c.chunk_id FROM forum.chunks c JOIN forum.documents d USING (document_id) WHERE d.external_id = 'd'"
        ).fetchone()["chunk_id"]
        assert_index_matches_chunks(conn)
        assert retracted not in [r["chunk_id"] for r in search(conn, "insulin therapy pumps", 50)]
        expected, _ = expected_top(conn, "insulin muscle cells")
        assert_same_ranking(search(conn, "insulin muscle cells"), expected)

    # A new version supersedes the old one: only the current text is searchable.
    ingest(db, [record("b", "Muscle repair after exercise needs sleep, not protein.")])
    with db.connection() as conn:
        assert_index_matches_chunks(conn)
        hits = conn.execute(
            """SELECT d.version FROM forum.bm25_search('exercise', 10) s JOIN forum.chunks c USING (chunk_id)
                 JOIN forum.documents d USING (document_id)""").fetchall()
        assert [h["version"] for h in hits] == [2]

    # Un-retracting brings the chunk back.
    ingest(db, [record("d", "Insulin therapy and insulin pumps.")])
    with db.connection() as conn:
        assert_index_matches_chunks(conn)
        assert retracted in [r["chunk_id"] for r in search(conn, "insulin pumps")]


def test_negative_idf_uses_epsilon_times_mean_idf(db, search):
    # "cell" is in 3 of 4 chunks: its raw idf is negative, so rank_bm25 floors it at
    # epsilon * (mean raw idf over the whole vocabulary).
    ingest(db, [record("1", "cell growth factor"), record("2", "cell membrane cell wall"),
                record("3", "cell death"), record("4", "liver enzyme")])
    with db.connection() as conn:
        expected, oracle = expected_top(conn, "cell wall")
        assert oracle.idf["cell"] == pytest.approx(0.25 * oracle.average_idf)
        assert math.log(4 - 3 + 0.5) - math.log(3 + 0.5) < 0
        assert_same_ranking(search(conn, "cell wall"), expected)


def test_repeated_query_words_count_as_rank_bm25_counts_them(db, search):
    ingest(db, [record("1", "protein folding and protein misfolding"), record("2", "protein diet"),
                record("3", "folding chairs"), record("4", "diet and exercise")])
    with db.connection() as conn:
        assert query_tokens(conn, "protein protein folding") == ["fold", "protein", "protein"]
        expected, _ = expected_top(conn, "protein protein folding")
        assert_same_ranking(search(conn, "protein protein folding"), expected)


def test_queries_that_match_nothing_return_no_rows(db, search):
    ingest(db, [record("1", "insulin resistance")])
    with db.connection() as conn:
        assert search(conn, "the and of") == []          # stop words only
        assert search(conn, "zebrafish") == []           # unknown term
        assert search(conn, "'; DROP TABLE forum.chunks; --") == []
        assert len(search(conn, "insulin resistance", 2_000_000_000)) == 1  # a huge k costs nothing extra
        assert conn.execute("SELECT count(*) AS n FROM forum.chunks").fetchone()["n"] == 1


def test_empty_corpus_and_bad_k(db, search):
    with db.connection() as conn:
        assert search(conn, "insulin") == []
        with pytest.raises(Exception, match="k must be a positive integer"):
            search(conn, "insulin", 0)


def test_filters_return_exactly_the_matching_rows(db, search):
    from datetime import datetime, timezone

    day = lambda d: datetime(2024, 1, d, tzinfo=timezone.utc)  # noqa: E731
    ingest(db, [record(f"h{i}", f"vaccine trial results {i}", sector="health", published_at=day(1 + i)) for i in range(10)]
           + [record(f"e{i}", f"vaccine storage energy {i}", sector="energy", published_at=day(15 + i)) for i in range(10)]
           + [record("x", "vaccine undated", sector="energy")])
    with db.connection() as conn:
        all_hits = search(conn, "vaccine", 100)
        info = {r["chunk_id"]: r for r in conn.execute(
            "SELECT c.chunk_id, d.sector, d.published_at FROM forum.chunks c JOIN forum.documents d USING (document_id)")}
        energy = search(conn, "vaccine", 100, sectors=["energy"])
        assert [r["chunk_id"] for r in energy] == [r["chunk_id"] for r in all_hits if info[r["chunk_id"]]["sector"] == "energy"]
        window = search(conn, "vaccine", 100, after=day(5), before=day(20))
        assert [r["chunk_id"] for r in window] == [
            r["chunk_id"] for r in all_hits
            if info[r["chunk_id"]]["published_at"] and day(5) <= info[r["chunk_id"]]["published_at"] < day(20)]
        # Selective filter, small k: still a full top-k, in the unfiltered order.
        top3 = search(conn, "vaccine", 3, sectors=["health"], after=day(8))
        assert len(top3) == 3
        assert all(info[r["chunk_id"]]["sector"] == "health" and info[r["chunk_id"]]["published_at"] >= day(8) for r in top3)
        assert [r["rank"] for r in top3] == [1, 2, 3]
        assert search(conn, "vaccine", 5, sectors=["'; DROP TABLE x; --"]) == []
