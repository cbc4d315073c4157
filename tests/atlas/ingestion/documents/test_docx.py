"""The DOCX reader: paragraphs and the table in document order, headings as sections, core properties."""

import zipfile

import pytest

from forum_atlas.ingestion.documents import DocumentError, read_document
from forum_atlas.ingestion.documents.container import MAX_MEMBERS, check_zip
from tests.support.hostile_files import docx_bomb


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


def test_a_small_decompression_bomb_is_refused_before_parsing(tmp_path):
    """5 MB of document.xml in 19 KB (python-docx took 54 s on such a file): refused for its ratio, unparsed."""
    bomb = docx_bomb(tmp_path / "bomb.docx", 5 * 1024 * 1024)
    with pytest.raises(DocumentError, match="decompression bomb") as refused:
        read_document(bomb)
    assert refused.value.kind == "suspicious"


def test_a_gigabyte_bomb_is_refused_from_its_directory(tmp_path):
    """1.2 GB expanded from 4 MB (the file that grew a run to 16 GB): refused before a byte is inflated."""
    bomb = docx_bomb(tmp_path / "big.docx", 1_200_000_000)
    with pytest.raises(DocumentError, match="expanded-size limit") as refused:
        read_document(bomb)
    assert refused.value.kind == "too_large"


def test_a_directory_that_lies_about_a_size_is_caught_while_inflating(tmp_path):
    liar = docx_bomb(tmp_path / "liar.docx", 20 * 1024 * 1024, declared_size=1000)
    with pytest.raises(DocumentError) as refused:
        read_document(liar)
    assert refused.value.kind == "corrupt"   # zipfile stops at the declared size; the CRC then fails


def test_the_limits_apply_while_streaming_too(tmp_path):
    """Within the ratio, past the expanded limit given: counted while inflating, refused as too large."""
    honest = docx_bomb(tmp_path / "honest.docx", 3 * 1024 * 1024)
    with pytest.raises(DocumentError) as refused:
        check_zip(honest, max_expanded_bytes=2 * 1024 * 1024, max_ratio=10_000)
    assert refused.value.kind == "too_large"
    assert "word/document.xml" in check_zip(honest, max_ratio=10_000)


def test_a_zip_with_a_huge_directory_is_refused_unread(tmp_path):
    crowded = tmp_path / "crowded.docx"
    with zipfile.ZipFile(crowded, "w") as z:
        for number in range(MAX_MEMBERS + 1):
            z.writestr(f"p/{number}", b"")
    with pytest.raises(DocumentError, match="members") as refused:
        read_document(crowded)
    assert refused.value.kind == "suspicious"
