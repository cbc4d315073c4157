"""The DOCX reader: paragraphs and the table in document order, headings as sections, core properties."""

import zipfile

import pytest

from forum_atlas.ingestion.documents import DocumentError, read_document


def test_report_headings_table_and_properties(fixtures_dir):
    report = read_document(fixtures_dir / "report.docx")
    assert report.kind == "docx" and report.reader == "python-docx"
    assert report.title == "Coastal Cycle Lane Pilot: Evaluation Report 2025"
    assert report.authors == ["Okwuosa Fairweather-Lund"] and report.published_at.isoformat() == "2025-10-06T09:00:00+00:00"
    assert [(s.level, s.title) for s in report.sections] == [
        (1, "Coastal Cycle Lane Pilot: Evaluation Report 2025"), (2, "Summary"), (2, "Background and aims"),
        (2, "Method"), (2, "Results"), (2, "Recommendations")]
    assert all(report.text.startswith(s.title, s.start) for s in report.sections)
    text = report.text
    assert "Measure | Year before pilot | Pilot year | Change" in text
    assert "Collisions involving cyclists | 9 | 3 | -6" in text
    # the table sits between the paragraph before it and the one after it
    assert text.index("The table below compares") < text.index("Weekday cycle trips") < text.index("School-run cycling")


def test_a_zip_that_is_not_a_word_document_is_unsupported_and_a_broken_one_corrupt(tmp_path):
    archive = tmp_path / "photos.docx"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.txt", "x")
    with pytest.raises(DocumentError, match="not a Word") as unsupported:
        read_document(archive)
    assert unsupported.value.kind == "unsupported"
    broken = tmp_path / "broken.docx"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(DocumentError) as corrupt:
        read_document(broken)
    assert corrupt.value.kind == "corrupt"
