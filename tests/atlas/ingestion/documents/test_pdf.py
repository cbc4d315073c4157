"""The PDF reader on every file of ../shared/data/documents: outcomes, page counts, metadata and clean text."""

import json
import re

import pytest

from forum_atlas.ingestion.documents import DocumentError, read_document
from forum_atlas.ingestion.documents.model import page_range

IMAGE_ONLY = {"imagemagick-ASCII85Decode.pdf", "imagemagick-CCITTFaxDecode.pdf", "imagemagick-images.pdf",
              "imagemagick-lzw.pdf", "inline-image.pdf", "grayscale-image.pdf", "cmyk-image.pdf"}
ENCRYPTED = "libreoffice-writer-password.pdf"
PAPERS = {
    "10.1038_s41467-024-44806-1.pdf": ("Evolution of optimal growth temperature in Asgard archaea inferred from the "
                                       "temperature dependence of GDP binding to EF-1A", "10.1038/s41467-024-44806-1", 7),
    "10.1186_s13059-023-02935-8.pdf": ("A comprehensive map of human glucokinase variant activity",
                                       "10.1186/s13059-023-02935-8", 23),
    "10.1186_s12915-024-01918-w.pdf": ("Exonuclease editor promotes precision of gene editing in mammalian cells",
                                       "10.1186/s12915-024-01918-w", 16),
    "10.3390_ijms25031660.pdf": ("Characterization of a Novel N4-Methylcytosine Restriction-Modification System in "
                                 "Deinococcus radiodurans", "10.3390/ijms25031660", 17),
}
RUNNING_HEADS = {
    "10.1038_s41467-024-44806-1.pdf": r"Nature Communications \| \(2024\) 15:515|Article https://doi\.org/10\.1038",
    "10.1186_s13059-023-02935-8.pdf": r"Gersing et al\. Genome Biology \(2023\) 24:97 Page",
    "10.1186_s12915-024-01918-w.pdf": r"Shi et al\. BMC Biology \(2024\) 22:119 Page",
    "10.3390_ijms25031660.pdf": r"Int\. J\. Mol\. Sci\. 2024, 25, 1660 \d+ of 17",
}


def _flat(text):
    return " ".join(text.split())


@pytest.fixture(scope="module")
def samples(shared_data):
    return shared_data / "documents" / "pdf-samples"


@pytest.fixture(scope="module")
def read_all(shared_data, samples):
    """Every PDF read once for the module: file name → ReadDocument or DocumentError (the thesis is parsed once)."""
    results = {}
    for path in sorted(samples.glob("*.pdf")) + sorted((shared_data / "documents" / "papers").glob("*.pdf")):
        try:
            results[path.name] = read_document(path)
        except DocumentError as exc:
            results[path.name] = exc
    return results


def test_every_sample_has_its_expected_outcome_and_page_count(samples, read_all):
    listed = {entry["path"].rsplit("/", 1)[-1]: entry for entry in json.loads((samples / "files.json").read_text())["data"]}
    on_disk = {p.name for p in samples.glob("*.pdf")}
    assert on_disk <= set(listed)
    for name in sorted(on_disk):
        result = read_all[name]
        if name == ENCRYPTED:
            assert isinstance(result, DocumentError) and result.kind == "encrypted" and "--pdf-password" in str(result)
        elif name in IMAGE_ONLY:
            assert isinstance(result, DocumentError) and result.kind == "no_text_layer", name
            assert "OCR is not done" in str(result)
            pages = listed[name]["pages"]
            assert f"on {pages} page" in str(result), name   # the page count PDFium saw
        else:
            assert not isinstance(result, DocumentError), f"{name}: {result}"
            assert result.pages == listed[name]["pages"], name
            assert result.title and result.title.lower() != "untitled", name
            assert result.reader == "pypdfium2" and result.reader_version


def test_an_encrypted_pdf_opens_with_its_password_and_a_wrong_one_is_named(samples):
    opened = read_document(samples / ENCRYPTED, password="openpassword")
    assert opened.pages == 1 and "Lorem ipsum" in opened.text
    with pytest.raises(DocumentError, match="the password given does not open it") as wrong:
        read_document(samples / ENCRYPTED, password="nope")
    assert wrong.value.kind == "encrypted"


def test_arabic_rotated_forms_and_outlines(read_all):
    arabic = read_all["habibi.pdf"]
    assert "habibi" in arabic.text and len(re.findall(r"[\u0600-\u06ff]", arabic.text)) >= 5
    rotated = read_all["habibi-rotated.pdf"]   # pages at 0, 90, 180 and 270 degrees: each keeps its text
    assert rotated.pages == 4 and all("habibi" in rotated.text[a:b] for a, b in
                                      zip(rotated.page_starts, rotated.page_starts[1:] + [len(rotated.text)]))
    assert "Example for a Form" in read_all["libreoffice-form.pdf"].text
    assert "Name" in read_all["pdflatex-forms.pdf"].text
    outline = read_all["pdflatex-outline.pdf"]
    assert [s.title for s in outline.sections] == ["Foo", "Bar", "Baz"] * 3
    # each title sits where it is printed, on the page its bookmark points to
    assert all(outline.text.startswith(s.title, s.start) for s in outline.sections)
    assert [page_range(outline.page_starts, s.start, s.start + 1)[0] for s in outline.sections] == [2, 2, 2, 2, 3, 3, 3, 4, 4]
    assert [s.title for s in read_all["mistitled_outlines_example.pdf"].sections][:3] == ["First", "Second", "Third"]


def test_two_columns_read_column_by_column(read_all):
    text = _flat(read_all["multicolumn.pdf"].text)
    # the left column ends with "Donec nonummy", the right one goes on with "pellentesque ante."
    assert "Vivamus viverra fermentum felis. Donec nonummy pellentesque ante. Phasellus adipiscing semper elit." in text


def test_the_long_thesis(read_all):
    thesis = read_all["GeoTopo-komprimiert.pdf"]
    assert thesis.pages == 117 and thesis.title == "Geometrie und Topologie"
    assert not re.search(r"[\ufb00-\ufb06\ufffe\u00ad]", thesis.text)
    assert not re.search(r"[a-zäöüß]-\n[a-zäöüß]", thesis.text)
    assert len(thesis.sections) > 20 and thesis.page_starts == sorted(thesis.page_starts)


def test_a_file_reopened_every_few_pages_reads_the_same(read_all, samples, monkeypatch):
    """PDFium's parsed objects are freed by reopening the file every PAGES_PER_OPENING pages (memory stays
    flat over a long PDF): what is read must not change."""
    from forum_atlas.ingestion.documents import pdf

    monkeypatch.setattr(pdf, "PAGES_PER_OPENING", 7)
    reopened = read_document(samples / "GeoTopo-komprimiert.pdf")
    thesis = read_all["GeoTopo-komprimiert.pdf"]
    assert (reopened.text, reopened.page_starts, reopened.sections) == (thesis.text, thesis.page_starts,
                                                                         thesis.sections)


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_papers_title_doi_pages_and_quotable_text(read_all, name):
    paper = read_all[name]
    title, doi, pages = PAPERS[name]
    assert (paper.title, paper.doi, paper.pages) == (title, doi, pages)
    assert not re.search(r"[\ufb00-\ufb06\ufffe\u00ad\x00]", paper.text)   # no ligature, hyphen mark, soft hyphen, NUL
    assert not re.search(r"[a-z]-\n[a-z]", paper.text)                     # no line-break hyphen left
    assert not re.search(RUNNING_HEADS[name], paper.text)
    assert paper.sections and paper.authors and paper.published_at is not None


def test_sentences_across_page_and_line_breaks_are_stored_contiguous(read_all):
    gck = read_all["10.1186_s13059-023-02935-8.pdf"]
    sentence = ("Due to the population prevalence of GCK-MODY, and given that early diagnosis can limit unnecessary "
                "treatment and surveillance due to misdiagnosis [3], GCK has been proposed for inclusion in population "
                "screening programs [32].")
    start = _flat(gck.text).find(sentence)
    assert start >= 0
    at = gck.text.find("Due to the population prevalence of GCK-MODY")
    assert page_range(gck.page_starts, at, at + 400) == (2, 3)   # the sentence runs from page 2 onto page 3
    asgard = _flat(read_all["10.1038_s41467-024-44806-1.pdf"].text)
    assert "substantially affects molecular and cellular properties" in asgard          # "mole-/cular"
    assert "experimentally measure the optimal GDP-binding temperature of EF-1A" in asgard   # "EF-/1A", "tem-/perature"


def test_every_key_sentence_of_the_paper_questions_is_stored_verbatim_on_its_page(read_all, fixtures_dir):
    """The 31 key sentences (eleven cross a line-break hyphen) as a reader sees them: found in the stored text,
    on the page the question names."""
    questions = json.loads((fixtures_dir / "paper_questions.json").read_text())
    assert len(questions) >= 20
    for q in questions:
        paper = read_all[q["paper"]]
        found = re.search(r"\s+".join(map(re.escape, q["key_sentence"].split())), paper.text)
        assert found, f"{q['id']}: key sentence not in the stored text"
        assert page_range(paper.page_starts, found.start(), found.end())[0] == q["page"], q["id"]
