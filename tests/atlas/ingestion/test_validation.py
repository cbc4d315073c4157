from datetime import UTC

import pytest

from forum_atlas.ingestion.records import iter_raw, load_rows
from forum_atlas.ingestion.validation import BatchValidationError, require_valid, validate_rows


@pytest.fixture(scope="module")
def good_rows(shared_data):
    batch = next(iter_raw(shared_data / "scifact" / "beir" / "corpus.jsonl", "beir", batch_size=50))
    return load_rows(batch)


def test_real_corpus_rows_pass(good_rows):
    report = validate_rows(good_rows)
    assert report.success and report.rows == 50 and report.expectations >= 10


def test_each_bad_row_is_named_with_the_expectation_it_failed(good_rows):
    rows = [dict(r) for r in good_rows]
    rows[3]["source_importance"] = 7
    rows[5]["text"] = "   "
    rows[8]["published_at"] = "2021-13-45"
    rows[9]["url"] = "ftp:/nowhere"
    rows[10]["source_quality"] = "5"  # a string is not a score
    rows[11]["external_id"] = rows[12]["external_id"]
    report = validate_rows(rows)
    failed = {(f.origin, f.expectation, f.column) for f in report.failures}
    assert failed == {
        ("corpus.jsonl:4", "expect_column_values_to_be_in_set", "source_importance"),
        ("corpus.jsonl:6", "expect_column_values_to_match_regex", "text"),
        ("corpus.jsonl:9", "expect_column_values_to_be_dateutil_parseable", "published_at"),
        ("corpus.jsonl:10", "expect_column_values_to_match_regex", "url"),
        ("corpus.jsonl:11", "expect_column_values_to_be_in_set", "source_quality"),
        ("corpus.jsonl:12", "expect_column_values_to_be_unique", "external_id"),
        ("corpus.jsonl:13", "expect_column_values_to_be_unique", "external_id"),
    }
    text = report.as_text()
    assert text.startswith("7 of 50 rows failed validation; nothing from this batch was written")
    assert "corpus.jsonl:4 (id " in text and "got 7" in text
    with pytest.raises(BatchValidationError) as caught:
        require_valid(rows)
    assert caught.value.report.failed_origins[0] == "corpus.jsonl:4"
    assert "| corpus.jsonl:6 |" in report.as_markdown()


def test_missing_required_values(good_rows):
    rows = [dict(good_rows[0]), dict(good_rows[1])]
    rows[0]["text"] = None
    rows[1]["source_licence"] = None
    rows[1]["external_id"] = None
    failed = {(f.origin, f.column) for f in validate_rows(rows).failures}
    assert ("corpus.jsonl:1", "text") in failed
    assert {("corpus.jsonl:2", "source_licence"), ("corpus.jsonl:2", "external_id")} <= failed


def _row(good, **changes):
    row = dict(good)
    row.update(changes)
    return row


def test_what_the_writer_would_choke_on_is_named_with_its_expectation(good_rows):
    from datetime import datetime

    started = datetime(2026, 6, 1, 12, tzinfo=UTC)
    rows = [dict(r) for r in good_rows[:8]]
    rows[0]["text"] = 12345
    rows[1]["title"] = {}
    rows[2]["text"] = "before\u0000after"
    rows[3]["text"] = "lone \ud800 surrogate"
    rows[4]["published_at"] = "2099-01-01"
    rows[5]["published_at"] = "9999-12-31T23:00:00-05:00"
    rows[6]["external_id"] = 4983
    rows[7]["published_at"] = "2026-06-02T11:00:00Z"   # within the 1-day tolerance
    report = validate_rows(rows, run_started=started)
    failed = {(f.origin, f.expectation, f.column) for f in report.failures}
    assert failed == {
        ("corpus.jsonl:1", "expect_column_values_to_be_of_type", "text"),
        ("corpus.jsonl:2", "expect_column_values_to_be_of_type", "title"),
        ("corpus.jsonl:3", "expect_column_values_to_not_match_regex", "text"),
        ("corpus.jsonl:4", "expect_column_values_to_be_null", "text"),
        ("corpus.jsonl:5", "expect_column_values_to_be_between", "published_at"),
        ("corpus.jsonl:6", "expect_column_values_to_be_between", "published_at"),
        ("corpus.jsonl:7", "expect_column_values_to_be_of_type", "external_id"),
    }
    text = report.as_text()
    assert "a JSON int where text is required" in text and "a JSON dict where text is required" in text
    assert "NUL character at position 6" in text
    assert "lone surrogate U+D800 at position 5; not encodable as UTF-8" in text
    assert "more than 1 day after the run's start (2026-06-01T12:00:00+00:00) are refused" in text
    text.encode("utf-8")   # the report itself is printable


def test_one_row_at_fault_in_several_columns_is_reported_under_each(good_rows):
    """NUL, surrogates and types are each one expectation over all text columns: a failure still names
    every column at fault, and a NUL in one column is never blamed on another."""
    row = _row(good_rows[0], title="ti\u0000tle", url="https://x.org/\u0000", sector=7, source_licence=["OGL"])
    report = validate_rows([row, dict(good_rows[1])])
    assert sorted((f.origin, f.expectation, f.column) for f in report.failures) == [
        ("corpus.jsonl:1", "expect_column_values_to_be_of_type", "sector"),
        ("corpus.jsonl:1", "expect_column_values_to_be_of_type", "source_licence"),
        ("corpus.jsonl:1", "expect_column_values_to_not_match_regex", "title"),
        ("corpus.jsonl:1", "expect_column_values_to_not_match_regex", "url"),
    ]
    assert "NUL character at position 2" in report.as_text() and "NUL character at position 14" in report.as_text()


def test_a_batch_whose_only_fault_is_a_lone_surrogate_is_refused_by_row(good_rows):
    """great-expectations fingerprints a batch by hashing it as UTF-8: a lone surrogate anywhere in it
    raised a raw codec error unless something else (a dict) made it fall back to pickling."""
    rows = [dict(good_rows[0]), _row(good_rows[1], text="lone \ud800 surrogate", external_id="id-\udc80"),
            _row(good_rows[2], source_quality="\ud800")]
    report = validate_rows(rows)
    assert sorted((f.origin, f.expectation, f.column) for f in report.failures) == [
        ("corpus.jsonl:2", "expect_column_values_to_be_null", "external_id"),
        ("corpus.jsonl:2", "expect_column_values_to_be_null", "text"),
        ("corpus.jsonl:3", "expect_column_values_to_be_in_set", "source_quality"),
    ]
    text = report.as_text()
    assert "lone surrogate U+D800 at position 5; not encodable as UTF-8" in text
    assert "(id 'id-\\udc80')" in text
    text.encode("utf-8")   # printable, though the values it names are not
    from forum_atlas.ingestion.validation import validate_unique_ids

    # ids differing only in their lone surrogates stay distinct; the same one twice is a duplicate
    ids = validate_unique_ids([("a:1", "x\ud800"), ("a:2", "x\ud801"), ("a:3", "x\ud800")])
    assert [f.origin for f in ids.failures] == ["a:1", "a:3"]


def test_record_size_limit_names_the_limit_and_never_prints_the_text(good_rows):
    big = _row(good_rows[0], text="word " * 300_000)   # 1.5 MB
    report = validate_rows([big, dict(good_rows[1])], max_record_bytes=1_000_000)
    [failure] = report.failures
    assert (failure.origin, failure.expectation, failure.column) == (
        "corpus.jsonl:1", "expect_column_values_to_be_between", "text")
    assert "the limit is 1,000,000 bytes (raise it with ATLAS_MAX_RECORD_BYTES" in report.as_text()
    assert len(report.as_text()) < 1000 and len(report.as_markdown()) < 1500
    assert validate_rows([big], max_record_bytes=2_000_000).success
    # the limit counts UTF-8 bytes, not characters
    assert not validate_rows([_row(good_rows[0], text="é" * 600)], max_record_bytes=1000).success


def test_ids_repeated_across_the_run_are_refused_with_every_occurrence():
    from forum_atlas.ingestion.validation import validate_unique_ids

    report = validate_unique_ids([("in.jsonl:1", "a"), ("in.jsonl:2", "b"), ("in.jsonl:9", "a"), ("in.jsonl:10", 7)])
    assert [(f.origin, f.expectation) for f in report.failures] == [
        ("in.jsonl:1", "expect_column_values_to_be_unique"), ("in.jsonl:9", "expect_column_values_to_be_unique")]
    text = report.as_text()
    assert "nothing from this run was written" in text and "the same id is also at in.jsonl:9" in text
    assert validate_unique_ids([("x:1", "a"), ("x:2", "b")]).success
