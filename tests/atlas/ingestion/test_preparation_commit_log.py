"""The failure note of an interrupted ingest run (issue 10): what was committed, and where a re-run resumes."""

from forum_atlas.ingestion.preparation import CommitLog, WriteResult
from forum_atlas.ingestion.records import RawBatch


def _raw(items):
    return RawBatch("jsonl", "in.jsonl", [(i, b"{}") for i in items], 0, 0)


def test_nothing_committed_says_so():
    assert CommitLog("in.jsonl").failure_note(1, _raw([1, 2, 3])) == (
        "nothing of in.jsonl was committed: batch 1 (lines 1–3) failed before any write.")


def test_committed_batches_are_counted_through_their_last_line():
    log = CommitLog("in.jsonl")
    log.committed(_raw(range(1, 1001)), WriteResult(1000, 1200, 1200))
    log.committed(_raw(range(1001, 2001)), WriteResult(990, 1100, 1100, 3))
    note = log.failure_note(3, _raw(range(2001, 2500)))
    assert note.startswith("committed before this failure: batches 1–2 of in.jsonl through line 2,000 "
                           "(+1990 documents, +2300 chunks, +2300 embeddings); batch 3 (lines 2,001–2,499)")
    assert note.endswith("resumes at batch 3.")


def test_folder_batches_name_files():
    log = CommitLog("notes")
    log.committed(RawBatch("folder", "notes", [("a.md", None), ("b.md", None)], 0, 0), WriteResult(2, 2, 2))
    assert "through file b.md" in log.failure_note(2, RawBatch("folder", "notes", [("c.md", None)], 0, 0))
