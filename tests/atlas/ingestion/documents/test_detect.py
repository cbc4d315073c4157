"""Readers are chosen by content; what no reader takes gets a typed outcome."""

import pytest

from forum_atlas.ingestion.documents import DocumentError, read_document


@pytest.mark.parametrize(("name", "content", "kind", "says"), [
    ("empty.pdf", b"", "empty", "0 bytes"),
    ("blank.md", b"  \n\n", "empty", "whitespace"),
    ("setup.exe", b"MZ\x90\x00\x03\x00", "unsupported", "Windows executable"),
    ("photo.pdf", b"\xff\xd8\xff\xe0\x00\x10JFIF", "unsupported", "JPEG"),
    ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "unsupported", "legacy Office"),
    ("data.csv", b"a,b\n1,2\n", "unsupported", ".csv text file"),
    ("cut.pdf", b"%PDF-1.7\n1 0 obj\n<<", "corrupt", "truncated"),
])
def test_typed_outcomes(tmp_path, name, content, kind, says):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DocumentError, match=says) as refused:
        read_document(path)
    assert refused.value.kind == kind


def test_size_limit_and_a_pdf_named_as_text(tmp_path, shared_data):
    pdf = (shared_data / "documents" / "pdf-samples" / "minimal-document.pdf").read_bytes()
    disguised = tmp_path / "notes.txt"
    disguised.write_bytes(pdf)
    assert read_document(disguised).kind == "pdf"
    with pytest.raises(DocumentError, match="above the size limit") as large:
        read_document(disguised, max_file_bytes=len(pdf) - 1)
    assert large.value.kind == "too_large"
