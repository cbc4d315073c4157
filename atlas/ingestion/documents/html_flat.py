"""HTML nested deeper than lxml reads: the page's visible text, block by block, on Python's streaming parser.

libxml2 (under lxml, under trafilatura) stops building the tree at 256 levels of nesting and drops the rest
of the page silently: 100k nested `<div>`s around five sentences came out "empty". `nesting_depth` measures the
depth on the tags alone; past `LXML_MAX_DEPTH` the page is read here instead, by `html.parser`, which keeps no
tree and so no depth. It is not trafilatura: no main-text heuristics beyond leaving out what is never content
(scripts, styles, navigation, headers, footers, forms). The reader name says which read a document.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser

from forum_atlas.ingestion.documents import cleaning
from forum_atlas.ingestion.documents.model import Section

READER = "html.parser"
READER_VERSION = f"Python {sys.version_info.major}.{sys.version_info.minor}"
# libxml2's HTML parser gives up past 256 levels (measured: 200 nested <div>s read, 300 came out empty).
LXML_MAX_DEPTH = 250

_TAG = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*?(/?)>")
_VOID = {b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta", b"param", b"source",
         b"track", b"wbr"}
# Closed by the next of their kind (or their parent) in HTML, so never nested by the parser: left out of the count.
_SELF_CLOSING = {b"p", b"li", b"dt", b"dd", b"option", b"tr", b"td", b"th", b"thead", b"tbody", b"tfoot"}


def nesting_depth(data: bytes, stop_above: int = LXML_MAX_DEPTH) -> int:
    """How deep the page's elements nest, from its tags (a close tag closes what it matches, and what is open
    inside it); the count stops once past `stop_above`."""
    stack: list[bytes] = []
    for match in _TAG.finditer(data):
        name = match.group(2).lower()
        if match.group(1):
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
        elif name not in _VOID and name not in _SELF_CLOSING and not match.group(3):
            stack.append(name)
            if len(stack) > stop_above:
                break
    return len(stack)


_SKIPPED = {"script", "style", "noscript", "template", "head", "nav", "header", "footer", "aside", "form", "svg",
            "iframe", "select", "button"}
_BLOCKS = {"p", "div", "section", "article", "main", "li", "tr", "br", "table", "ul", "ol", "blockquote", "pre",
           "dt", "dd", "figure", "figcaption", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "body", "address"}
_HEADINGS = {f"h{level}": level for level in range(1, 7)}


class _FlatText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, int | None]] = []   # (text, heading level or None)
        self.title_parts: list[str] = []
        self._current: list[str] = []
        self._skipping = 0
        self._in_title = False
        self._heading: int | None = None

    def _flush(self) -> None:
        if not self._current:
            return
        line = " ".join(cleaning.clean_fragment("".join(self._current)).split())
        if line:
            self.blocks.append((line, self._heading))
        self._current = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BLOCKS:
            self._flush()
            self._heading = _HEADINGS.get(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in _SKIPPED:
            self._skipping = max(self._skipping - 1, 0)
        elif tag in _BLOCKS:
            self._flush()
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skipping:
            self._current.append(data)


def flat_text(html: str) -> tuple[str, list[Section], str]:
    """(text, sections, title) of a page: its visible blocks, one paragraph each, headings as sections."""
    parser = _FlatText()
    parser.feed(html)
    parser.close()
    parser._flush()
    blocks: list[str] = []
    sections: list[Section] = []
    length = 0
    for line, heading in parser.blocks:
        if heading is not None:
            sections.append(Section(length, heading, line))
        blocks.append(line)
        length += len(line) + 2
    return "\n\n".join(blocks), sections, " ".join(cleaning.clean_fragment("".join(parser.title_parts)).split())
