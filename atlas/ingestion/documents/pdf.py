"""PDF reader on PDFium (pypdfium2): text in reading order, page by page, with the outline as sections.

Pages are opened, read and closed one at a time, so memory holds the text, never the page objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pypdfium2 as pdfium

from forum_atlas.ingestion.documents import cleaning
from forum_atlas.ingestion.documents.model import DocumentError, ReadDocument, Section

READER = "pypdfium2"
VERSION = f"{pdfium.version.PYPDFIUM_INFO} (PDFium {pdfium.version.PDFIUM_INFO})"

# PDFium's load errors (FPDF_ERR_*): 4 = password, 5 = unsupported security handler.
_ENCRYPTED = {4, 5}
# Fewer visible characters than this per page on average: the pages are images (a scan, a photo).
MIN_CHARS_PER_PAGE = 10
_DOI = re.compile(r"\b10\.\d{4,9}/[-._;()/:A-Za-z0-9]+")
_UNTITLED = {"", "untitled", "microsoft word", "title"}


def open_pdf(path: Path, password: str | None = None) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(str(path), password=password)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in _ENCRYPTED:
            said = "the password given does not open it" if password else "no password was given (--pdf-password)"
            raise DocumentError("encrypted", f"encrypted PDF: {said}") from None
        raise DocumentError("corrupt", f"corrupt or truncated PDF: {exc}") from None


def _page_lines(page: pdfium.PdfPage) -> list[str]:
    """The page's lines in reading order (columns one after the other)."""
    textpage = page.get_textpage()
    try:
        raw = textpage.get_text_range()
        lines = raw.split("\r\n")
        # PDFium's text has one character per char index where nothing was merged: only then can each
        # line's horizontal extent be looked up, which reading order across columns needs.
        if len(raw) != textpage.count_chars() or len(lines) < 8:
            return lines
        placed, position = [], 0
        for line in lines:
            if line.strip():
                left = textpage.get_charbox(position)[0]
                right = textpage.get_charbox(position + len(line) - 1)[2]
                placed.append(cleaning.PageLine(line, left, right))
            position += len(line) + 2
        return [line.text for line in cleaning.order_columns(placed, page.get_width())]
    finally:
        textpage.close()


# PDFium keeps what it parsed of a document (objects, fonts) until the document is closed: over a 1,053-page
# file that grew to ~50 MB. Reopening the file every this many pages bounds it (~14 MB) and costs nothing
# measurable (a reopen reads the cross-reference table only).
PAGES_PER_OPENING = 100


def iter_page_lines(path: Path, password: str | None = None,
                    on_page: Callable[[int], None] | None = None) -> Iterator[list[str]]:
    """Each page's lines, characters cleaned, one page in memory at a time."""
    document = open_pdf(path, password)
    try:
        for index in range(len(document)):
            if index and index % PAGES_PER_OPENING == 0:
                document.close()
                document = open_pdf(path, password)
            page = document[index]
            try:
                lines = _page_lines(page)
            finally:
                page.close()
            if on_page:
                on_page(index + 1)
            yield [cleaning.drop_invisible(cleaning.expand_ligatures(line)).rstrip() for line in lines]
    finally:
        document.close()


def _pdf_date(value: str) -> datetime | None:
    match = re.match(r"D:(\d{4})(\d{2})?(\d{2})?", value or "")
    if not match:
        return None
    year, month, day = int(match.group(1)), int(match.group(2) or 1), int(match.group(3) or 1)
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def find_doi(text: str) -> str | None:
    match = _DOI.search(text)
    return match.group(0).rstrip(".,;:)") if match else None


def _title(meta_title: str, first_page: list[str]) -> str:
    title = " ".join(cleaning.clean_fragment(meta_title).split())
    if title.lower() not in _UNTITLED:
        return title
    return next((" ".join(line.split()) for line in first_page if len(line.strip()) > 2), "")[:300]


def _sections(document: pdfium.PdfDocument, page_texts: list[str], page_starts: list[int]) -> list[Section]:
    """The outline (bookmarks): each title placed where it is printed on its page (after the previous title
    found there), else at the page's start."""
    sections = []
    searched_from: dict[int, int] = {}
    for bookmark in document.get_toc(max_depth=8):
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        title = " ".join(cleaning.clean_fragment(bookmark.get_title() or "").split())
        if index is None or not title or index >= len(page_texts):
            continue
        found = page_texts[index].find(title, searched_from.get(index, 0))
        if found >= 0:
            searched_from[index] = found + len(title)
        sections.append(Section(page_starts[index] + max(found, 0), bookmark.level + 1, title))
    return sorted(sections, key=lambda s: s.start)


# Joins a page's lines while it waits for the whole document's running heads to be known: one string per
# page instead of one per line. `drop_invisible` removes control characters, so no line holds it.
_LINE_SEPARATOR = "\x00"


def read_pdf(path: Path, *, password: str | None = None, on_page: Callable[[int], None] | None = None) -> ReadDocument:
    first_page: list[str] = []
    pages: list[str] = []
    edges: list[cleaning.PageEdges] = []
    visible = 0
    for lines in iter_page_lines(path, password, on_page):
        if not pages:
            first_page = lines
        visible += sum(len("".join(line.split())) for line in lines)
        edges.append(cleaning.page_edges(lines))
        pages.append(_LINE_SEPARATOR.join(lines))
    if not pages:
        raise DocumentError("empty", "the PDF has no pages")
    if visible < MIN_CHARS_PER_PAGE * len(pages):
        raise DocumentError("no_text_layer", f"no text layer ({visible} characters on {len(pages)} page{'s' if len(pages) > 1 else ''}): the "
                                             "pages are images, and OCR is not done")
    running = cleaning.running_keys(edges)
    page_texts = ["\n".join(cleaning.drop_running_lines(page.split(_LINE_SEPARATOR), running)).strip("\n")
                  for page in pages]
    del pages
    words = cleaning.vocabulary(*page_texts)
    page_texts = [cleaning.join_line_break_hyphens(text, words) if cleaning.PDFIUM_LINE_HYPHEN in text or "-\n" in text
                  else text for text in page_texts]
    text, page_starts = cleaning.join_pages(page_texts, words)
    document = open_pdf(path, password)   # the pages are read: one opening for the metadata and the outline
    try:
        meta = document.get_metadata_dict()
        sections = _sections(document, page_texts, page_starts)
    finally:
        document.close()
    authors = [a.strip() for a in re.split(r";|,|\band\b", cleaning.clean_fragment(meta.get("Author", ""))) if a.strip()]
    return ReadDocument(
        text=text, kind="pdf", reader=READER, reader_version=VERSION,
        title=_title(meta.get("Title", ""), cleaning.drop_running_lines(first_page, running)), page_starts=page_starts,
        sections=sections, authors=authors,
        published_at=_pdf_date(meta.get("CreationDate", "")),
        doi=find_doi("\n".join(first_page)) or find_doi(meta.get("Subject", "")),
    )
