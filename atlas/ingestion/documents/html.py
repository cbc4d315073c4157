"""HTML reader on trafilatura: the main text of a saved page, without navigation, advertising or comments.

trafilatura comes with the main install (a folder of saved pages goes in as a folder of PDFs does).
"""

from __future__ import annotations

from datetime import UTC
from importlib import metadata
from pathlib import Path

from forum_atlas.ingestion.documents import cleaning, html_flat
from forum_atlas.ingestion.documents.model import DocumentError, ReadDocument, Section, missing_reader

READER = "trafilatura"


def _trafilatura():
    try:
        import trafilatura
    except ImportError as exc:
        raise missing_reader("HTML", "trafilatura", exc) from None
    return trafilatura


def _date(value: str | None):
    if not value:
        return None
    import dateutil.parser

    parsed = dateutil.parser.parse(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def max_page_bytes() -> int:
    """The largest page trafilatura reads: above its MAX_FILE_SIZE it returns nothing, which read as "empty"."""
    from trafilatura.settings import DEFAULT_CONFIG

    return DEFAULT_CONFIG.getint("DEFAULT", "MAX_FILE_SIZE")


def read_html(path: Path) -> ReadDocument:
    from lxml import etree

    trafilatura = _trafilatura()
    if (size := path.stat().st_size) > (limit := max_page_bytes()):   # refused unread
        raise DocumentError("too_large", f"above the size limit for an HTML page: {size:,} bytes > {limit:,}")
    data = path.read_bytes()
    if (depth := html_flat.nesting_depth(data)) > html_flat.LXML_MAX_DEPTH:
        return _read_deep_html(path, data, depth)
    xml = trafilatura.extract(data, output_format="xml", include_comments=False, include_tables=True,
                              include_formatting=False, include_links=False, include_images=False, with_metadata=True)
    if not xml:
        raise DocumentError("empty", "no main text found in the HTML page")
    root = etree.fromstring(xml.encode("utf-8"))
    main = root.find("main")
    blocks: list[str] = []
    sections: list[Section] = []
    length = 0
    for element in main.iter("head", "p", "item", "row") if main is not None else ():
        if element.tag == "row":
            line = " | ".join(" ".join("".join(cell.itertext()).split()) for cell in element.iter("cell"))
        elif element.tag == "p" and element.getparent() is not None and element.getparent().tag in ("cell", "item"):
            continue
        else:
            line = " ".join("".join(element.itertext()).split())
        line = cleaning.clean_fragment(line)
        if not line:
            continue
        if element.tag == "head":
            rend = element.get("rend", "h2")
            sections.append(Section(length, int(rend[1]) if rend[1:].isdigit() else 2, line))
        blocks.append(line)
        length += len(line) + 2
    text = "\n\n".join(blocks)
    if not text.strip():
        raise DocumentError("empty", "no main text found in the HTML page")
    title = " ".join(cleaning.clean_fragment(root.get("title") or "").split()) or (sections[0].title if sections else path.stem)
    authors = [a.strip() for a in (root.get("author") or "").split(";") if a.strip()]
    return ReadDocument(
        text=text, kind="html", reader=READER, reader_version=metadata.version("trafilatura"), title=title,
        sections=sections, authors=authors, published_at=_date(root.get("date")), url=root.get("url"),
    )


def _read_deep_html(path: Path, data: bytes, depth: int) -> ReadDocument:
    """A page nested deeper than trafilatura's parser reads (`html_flat`): its visible text, not lost."""
    from trafilatura.utils import decode_file

    text, sections, title = html_flat.flat_text(decode_file(data))
    if not text.strip():
        raise DocumentError("empty", f"no text found in the HTML page (nested more than {depth - 1} levels deep)")
    return ReadDocument(text=text, kind="html", reader=html_flat.READER, reader_version=html_flat.READER_VERSION,
                        title=title or (sections[0].title if sections else path.stem), sections=sections)
