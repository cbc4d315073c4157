"""RET-3 fusion on hand-computed cases; RET-4 context budget; request checks."""

from datetime import datetime, timedelta, timezone

import pytest

from forum_atlas.rerank.none import NoReranker
from forum_atlas.retrieval.context import cap_context
from forum_atlas.retrieval.fusion import reciprocal_rank_fusion
from forum_atlas.retrieval.model import Candidate, RetrievalOptions
from forum_atlas.retrieval.query import MAX_QUERY_CHARS, QueryError, check_options, clean_query


def ranked(*ids):
    return [Candidate(chunk_id=c, rank=i, score=0.0) for i, c in enumerate(ids, start=1)]


def test_rrf_hand_computed_with_default_k_50():
    fused = reciprocal_rank_fusion({"bm25": ranked(1, 2, 3), "dense": ranked(3, 1, 4)})
    assert [c.chunk_id for c in fused] == [1, 3, 2, 4]
    assert [c.rank for c in fused] == [1, 2, 3, 4]
    assert fused[0].score == pytest.approx(1 / 51 + 1 / 52)
    assert fused[1].score == pytest.approx(1 / 53 + 1 / 51)
    assert fused[2].score == pytest.approx(1 / 52)
    assert fused[3].score == pytest.approx(1 / 53)


def test_rrf_k_changes_the_weights_and_ranks_are_one_based():
    fused = reciprocal_rank_fusion({"a": ranked(1, 2, 3), "b": ranked(3, 1, 4)}, k=0)
    assert [(c.chunk_id, c.score) for c in fused] == [(1, 1.5), (3, pytest.approx(1 / 3 + 1)), (2, 0.5),
                                                      (4, pytest.approx(1 / 3))]
    # k = 60 (the other common value): an item ranked 1 in one list only beats one ranked 2 and 3.
    fused60 = reciprocal_rank_fusion({"a": ranked(7, 8), "b": ranked(9, 8)}, k=60)
    assert fused60[0].chunk_id == 8 and fused60[0].score == pytest.approx(2 / 62)


def test_rrf_ties_break_by_best_rank_then_chunk_id():
    fused = reciprocal_rank_fusion({"a": ranked(20, 5), "b": ranked(10, 6)})
    assert [c.chunk_id for c in fused] == [10, 20, 5, 6]
    assert reciprocal_rank_fusion({"a": [], "b": []}) == []
    with pytest.raises(ValueError, match="1-based"):
        reciprocal_rank_fusion({"a": [Candidate(1, 0, 0.0)]})


def test_context_is_capped_at_a_sentence_or_word_boundary():
    text = "First sentence here. " * 300
    capped, truncated = cap_context(text, 4000)
    assert truncated and len(capped) <= 4000 and capped.endswith("here.")
    words = "word " * 2000
    capped, truncated = cap_context(words, 4000)
    assert truncated and len(capped) <= 4000 and capped.endswith("word")
    assert cap_context("x" * 5000, 4000) == ("x" * 4000, True)
    assert cap_context("short", 4000) == ("short", False)


def test_query_checks():
    assert clean_query("  insulin \n resistance ") == "insulin resistance"
    for bad, message in (("", "empty"), ("   \t\n", "empty"), ("a" * 100_000, "limit is"), ("a\x00b", "NUL"),
                         (None, "must be text")):
        with pytest.raises(QueryError, match=message):
            clean_query(bad)
    assert len(clean_query("a" * MAX_QUERY_CHARS)) == MAX_QUERY_CHARS
    assert clean_query("'; DROP TABLE forum.chunks; --") == "'; DROP TABLE forum.chunks; --"


def test_option_checks():
    known = ["health", "energy"]
    with pytest.raises(QueryError, match="unknown sector.*'nope'.*health"):
        check_options(RetrievalOptions(sectors=("health", "nope")), known)
    with pytest.raises(QueryError, match="top_k must be a positive integer"):
        check_options(RetrievalOptions(top_k=0), known)
    with pytest.raises(QueryError, match="recency window is empty"):
        check_options(RetrievalOptions(published_after=datetime(2024, 2, 1), published_before=datetime(2024, 1, 1)), known)
    checked, reason = check_options(RetrievalOptions(sectors="health"), known)
    assert checked.sectors == ("health",) and reason == ""
    future = datetime.now(timezone.utc) + timedelta(days=30)
    checked, reason = check_options(RetrievalOptions(published_after=future), known)
    assert "future" in reason
    naive, _ = check_options(RetrievalOptions(published_after=datetime(2020, 1, 1)), known)
    assert naive.published_after.tzinfo is timezone.utc


def _fused(*chunk_ids):
    from forum_atlas.retrieval.stages import StageResult

    return StageResult("fusion", "rrf", "1", {}, [Candidate(c, rank, 1.0 / rank) for rank, c in enumerate(chunk_ids, start=1)])


class _FailingReranker:
    name = engine = "failing"
    version = "1"

    def rerank(self, query, passages):
        from forum_atlas.providers import ProviderUnavailable

        raise ProviderUnavailable("failing", "503 from the test")


@pytest.mark.parametrize("reranker", [NoReranker(), _FailingReranker()], ids=["ranked", "degraded"])
def test_final_sources_are_distinct_documents_best_passage_first(reranker):
    from forum_atlas.retrieval.stages import rerank

    document_of = {11: 1, 12: 1, 21: 2, 31: 3, 13: 1, 41: 4}
    texts = {c: f"passage {c}" for c in document_of}
    stage = rerank(reranker, "q", _fused(11, 12, 21, 13, 31, 41), texts, RetrievalOptions(top_k=3), document_of)
    assert [(c.chunk_id, c.rank) for c in stage.candidates] == [(11, 1), (21, 2), (31, 3)]
    assert stage.parameters["one_per_document"] is True
    passages = rerank(reranker, "q", _fused(11, 12, 21), texts, RetrievalOptions(top_k=3, one_per_document=False), document_of)
    assert [c.chunk_id for c in passages.candidates] == [11, 12, 21]
