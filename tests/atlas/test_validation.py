import pytest

from forum_atlas.records import iter_raw, load_rows
from forum_atlas.validation import BatchValidationError, require_valid, validate_rows


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
