import json

import pytest

from forum_atlas.ingestion.chunking import ChunkingOptions
from forum_atlas.ingestion.preparation import StoredChunk, plan_chunks, stored_chunks
from forum_atlas.ingestion.records import (
    MAX_JSON_DEPTH,
    InputError,
    Record,
    SourceConflictError,
    SourceInfo,
    check_stated_sources,
    complete_source,
    default_source_name,
    detect_format,
    iter_raw,
    load_documents,
    load_rows,
    scan_input,
    to_records,
)

SOURCE = SourceInfo(name="Team notes", importance=3, quality_score=4, licence="CC-BY-4.0", sector="policy")


def _rows(path, fmt, source=None, batch_size=100):
    return [row for batch in iter_raw(path, fmt, batch_size=batch_size) for row in load_rows(batch, source)]


def _documents(path, source=SOURCE):
    """Rows and per-file outcomes of a folder of files (or one file)."""
    rows, outcomes = [], []
    for batch in iter_raw(path, "folder"):
        got_rows, got_outcomes = load_documents(batch, source)
        rows += got_rows
        outcomes += got_outcomes
    return rows, {o.file: (o.outcome, o.detail) for o in outcomes}


def test_jsonl_rows_carry_their_source_and_origin(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({
        "id": "a1", "title": "T", "text": "Body.", "url": "https://example.org/a1", "published_at": "2024-05-01",
        "sector": "energy", "source": {"name": "Gazette", "importance": 5, "quality_score": 4, "licence": "OGL-3.0"},
    }) + "\n\n")
    [row] = _rows(path, "jsonl")
    assert row["origin"] == "in.jsonl:1" and row["source_importance"] == 5 and row["sector"] == "energy"
    [record] = to_records([row])
    # "sector" is the document's; the source states none, so a known source keeps its own (a new one: general)
    assert record.sector == "energy" and record.source == SourceInfo("Gazette", 5, 4, "OGL-3.0", None, None)
    assert record.published_at.isoformat() == "2024-05-01T00:00:00+00:00"


def test_beir_corpus_reads_as_is(shared_data):
    corpus = shared_data / "scifact" / "beir" / "corpus.jsonl"
    assert detect_format(corpus) == "beir"
    batches = list(iter_raw(corpus, "beir", batch_size=2000))
    assert [len(b.items) for b in batches] == [2000, 2000, 1183]
    assert batches[-1].bytes_read == batches[-1].bytes_total == corpus.stat().st_size
    row = load_rows(batches[0])[0]
    assert row["external_id"] == "4983" and row["source_licence"].startswith("ODC-By-1.0")


def test_folder_of_markdown_takes_titles_from_headings(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# Grid outlook\n\nDemand rose.", encoding="utf-8")
    (tmp_path / "a.txt").write_text("Plain note.", encoding="utf-8")
    (tmp_path / "skip.bin").write_bytes(b"\x00\x01")
    rows, outcomes = _documents(tmp_path)
    assert [(r["external_id"], r["title"]) for r in rows] == [("a.txt", "a"), ("sub/b.md", "Grid outlook")]
    assert rows[1]["document"]["sections"] == [[0, 1, "Grid outlook"]]
    assert outcomes["skip.bin"][0] == "unsupported"   # listed with its reason, not silently skipped
    assert detect_format(tmp_path) == "folder"


def test_invalid_utf8_fails_that_file_alone_with_file_and_offset(tmp_path):
    (tmp_path / "good.md").write_text("fine", encoding="utf-8")
    (tmp_path / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    rows, outcomes = _documents(tmp_path)
    assert [r["external_id"] for r in rows] == ["good.md"]
    assert outcomes["latin1.md"] == ("corrupt", "latin1.md: not valid UTF-8 (byte 0xe9 at offset 3); re-encode the file as UTF-8")


def test_binary_file_is_refused_by_its_content_not_its_name(tmp_path):
    (tmp_path / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "blob.md").write_bytes(b"abc\x00def")
    rows, outcomes = _documents(tmp_path)
    assert rows == []
    assert outcomes == {"image.txt": ("unsupported", "unsupported type: a PNG image"),
                        "blob.md": ("unsupported", "unsupported type: binary content (NUL byte at offset 3)")}


def test_invalid_utf8_and_bad_json_lines_name_the_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": "1", "text": "ok"}\n{"id": "2", "text": "\xff"}\n')
    with pytest.raises(InputError, match=r"in\.jsonl:2: not valid UTF-8"):
        _rows(path, "jsonl")
    path.write_text('{"id": "1", "text": "ok"}\n{"id": 2,\n')
    with pytest.raises(InputError, match=r"in\.jsonl:2: not valid JSON"):
        _rows(path, "jsonl")
    path.write_text('["not", "an", "object"]\n')
    with pytest.raises(InputError, match="JSON object"):
        _rows(path, "jsonl")


def test_deep_nesting_is_refused_at_file_line_with_the_bound(tmp_path):
    """100,000 levels used to end in "maximum recursion depth exceeded" from the JSON parser."""
    path = tmp_path / "deep.jsonl"
    path.write_text('{"id": "1", "text": "ok"}\n' + "[" * 100_000 + "\n")
    assert detect_format(path) == "jsonl"
    for read in (lambda: scan_input(path, "jsonl"), lambda: _rows(path, "jsonl")):   # the run's check, a batch
        with pytest.raises(InputError, match=rf"^deep\.jsonl:2: JSON nested more than {MAX_JSON_DEPTH} levels deep"):
            read()

    def nested(depth):
        return "[" * depth + "]" * depth

    path.write_text(json.dumps({"id": "1", "text": "ok"})[:-1] + f', "meta": {nested(MAX_JSON_DEPTH - 1)}}}\n')
    assert len(_rows(path, "jsonl")) == 1, "the bound itself is allowed"
    path.write_text(json.dumps({"id": "1", "text": "ok"})[:-1] + f', "meta": {nested(MAX_JSON_DEPTH)}}}\n')
    with pytest.raises(InputError, match="levels deep"):
        _rows(path, "jsonl")
    # brackets inside text are characters, not nesting
    path.write_text(json.dumps({"id": "1", "text": "[{" * 50_000 + '\\"]}'}) + "\n")
    assert len(_rows(path, "jsonl")) == 1


@pytest.mark.parametrize("content", ["", " \n\n\t \r\n"])
def test_an_empty_or_blank_file_is_refused(tmp_path, content):
    path = tmp_path / "blank.jsonl"
    path.write_text(content)
    for fmt in ("jsonl", "beir"):
        with pytest.raises(InputError, match=r"blank\.jsonl: the file is empty or holds only whitespace"):
            iter_raw(path, fmt)


def test_missing_input_and_folder_without_source(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        list(iter_raw(tmp_path / "nope.jsonl", "jsonl"))
    (tmp_path / "a.md").write_text("x")
    with pytest.raises(InputError, match="documents need a source"):
        _documents(tmp_path, source=None)


def test_a_source_of_documents_takes_the_folder_name_then_the_stored_source_then_the_defaults(tmp_path):
    folder = tmp_path / "library"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.md").write_text("x")
    assert default_source_name(folder) == "library" and default_source_name(folder / "sub" / "a.md") == "sub"

    new, defaulted = complete_source(folder, {"licence": "CC0"}, None)
    assert new == SourceInfo(name="library", importance=3, quality_score=3, licence="CC0", sector=None)
    assert defaulted == ["name", "importance", "quality_score"]

    stored = SourceInfo(name="library", importance=5, quality_score=2, licence="CC-BY-4.0", sector="health")
    known, defaulted = complete_source(folder, {"name": "library", "importance": 4}, stored)
    assert (known.importance, known.quality_score, known.licence, known.sector) == (4, 2, "CC-BY-4.0", None)
    assert defaulted == []   # what was not given is the stored source's own, not a default


def test_content_hash_covers_title_and_text_only():
    [a, b, c] = to_records([
        {"origin": "x:1", "external_id": "1", "title": "T", "text": "body", "url": None, "published_at": None,
         "sector": "s", "source_name": "S", "source_importance": 1, "source_quality": 1, "source_licence": "L",
         "source_url": None, "retracted": False, "withdrawn": False, "superseded": False, **extra}
        for extra in ({}, {"url": "https://x.org", "retracted": True}, {"text": "body!"})
    ])
    assert a.content_hash == b.content_hash != c.content_hash


def test_content_hash_is_computed_once_and_the_record_stays_frozen():
    import dataclasses
    import hashlib

    record = Record("1", "T", "body", SOURCE)
    assert record.content_hash == hashlib.sha256(b"T\x1fbody").hexdigest()
    assert "content_hash" in record.__dict__   # stored, not a property recomputed per access
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.content_hash = "x"
    changed = dataclasses.replace(record, text="body!")
    assert changed.content_hash != record.content_hash == Record("1", "T", "body", SOURCE).content_hash


def test_jsonl_keeps_non_string_ids_and_titles_for_validation_to_name(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": 5, "title": {}, "text": 12345}\n{"id": "b", "text": "x"}\n')
    rows = _rows(path, "jsonl")
    assert (rows[0]["external_id"], rows[0]["title"], rows[0]["text"]) == (5, {}, 12345)
    assert rows[1]["title"] == ""
    assert scan_input(path, "jsonl").ids == [("in.jsonl:1", 5), ("in.jsonl:2", "b")]


def test_chunking_a_4mb_record_is_linear_not_quadratic():
    import time

    sentence = "The grid operator reported that demand rose by 3 percent in the quarter. "
    text = sentence * (4_000_000 // len(sentence))
    record = Record("big", "T", text, SOURCE)
    started = time.perf_counter()
    batch = plan_chunks([record], ChunkingOptions())
    seconds = time.perf_counter() - started
    assert batch.chunk_count > 3000
    assert seconds < 5, f"chunking 4 MB took {seconds:.1f} s (was ~31 s when the hash was recomputed per chunk)"


def test_a_source_sector_is_its_own_and_the_default_of_its_documents(tmp_path):
    path = tmp_path / "in.jsonl"
    source = {"name": "Gazette", "importance": 5, "quality_score": 4, "licence": "OGL-3.0", "sector": "energy"}
    path.write_text(json.dumps({"id": "a", "text": "A.", "source": source}) + "\n"
                    + json.dumps({"id": "b", "text": "B.", "sector": "finance", "source": source}) + "\n")
    first, second = to_records(_rows(path, "jsonl"))
    assert first.source == second.source == SourceInfo("Gazette", 5, 4, "OGL-3.0", None, "energy")
    assert (first.sector, second.sector) == ("energy", "finance")


def test_links_that_are_not_followed_are_listed_and_links_to_files_are_read(tmp_path):
    (tmp_path / "real.md").write_text("# Real\n\nText.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "to-file.md").symlink_to(tmp_path / "real.md")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "gone.md")
    (tmp_path / "to-folder").symlink_to(tmp_path / "sub")
    rows, outcomes = _documents(tmp_path)
    assert sorted(r["external_id"] for r in rows) == ["real.md", "to-file.md"]
    assert outcomes["dangling.md"][0] == outcomes["to-folder"][0] == "skipped"
    assert "dangling" in outcomes["dangling.md"][1] and "a folder" in outcomes["to-folder"][1]


def test_a_file_rewritten_while_it_is_read_is_refused_not_stored_half_written(tmp_path, monkeypatch):
    from forum_atlas.ingestion import records

    (tmp_path / "growing.md").write_text("# Log\n\nfirst half", encoding="utf-8")
    (tmp_path / "still.md").write_text("unchanged", encoding="utf-8")
    read = records.read_document

    def read_while_written(path, **options):
        document = read(path, **options)
        if path.name == "growing.md":
            with path.open("a") as writer:
                writer.write(" and the second half")
        return document

    monkeypatch.setattr(records, "read_document", read_while_written)
    rows, outcomes = _documents(tmp_path)
    assert [r["external_id"] for r in rows] == ["still.md"]
    assert outcomes["growing.md"][0] == "changed" and "ingest it again" in outcomes["growing.md"][1]


def test_a_file_that_vanished_after_listing_fails_alone(tmp_path):
    (tmp_path / "a.md").write_text("a", encoding="utf-8")
    (tmp_path / "b.md").write_text("b", encoding="utf-8")
    batches = list(iter_raw(tmp_path, "folder"))
    (tmp_path / "a.md").unlink()
    rows, outcomes = load_documents(batches[0], SOURCE)
    assert [r["external_id"] for r in rows] == ["b.md"] and outcomes[0].outcome == "unreadable"


def test_stated_sources_that_contradict_a_stored_one_are_refused_naming_the_row():
    stored = [SOURCE, SourceInfo(name="Other", importance=2, quality_score=2, licence="x")]
    silent = SourceInfo(name="Team notes", importance=3, quality_score=4, licence="CC-BY-4.0", sector=None)
    check_stated_sources(stored, {"Team notes": ("in.jsonl:1", silent), "Other": ("in.jsonl:2", stored[1])})
    demoted = SourceInfo(name="Team notes", importance=1, quality_score=4, licence="CC-BY-4.0")
    with pytest.raises(SourceConflictError, match=r"^in.jsonl:7: source 'Team notes' .*importance 1 \(stored: 3\)"):
        check_stated_sources(stored, {"Team notes": ("in.jsonl:7", demoted), "Other": ("in.jsonl:2", stored[1])})


def test_stored_chunks_are_embedded_with_their_heading():
    rows = [{"chunk_id": 4, "heading": "Grid", "body": "Storage."}, {"chunk_id": 5, "heading": "", "body": "Wind."}]
    assert stored_chunks(rows) == [StoredChunk(4, "Grid\nStorage."), StoredChunk(5, "Wind.")]
