"""Rules that turn extracted text into text a person can quote (issue 23, item 3). Each is a pure function.

The stored text is what the verbatim audit checks quotes against, so it must read as the page does:
ligatures expanded, words split across line breaks joined, running heads and page numbers gone,
columns read one after the other, invisible characters dropped.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# PDFium marks a hyphen it found at a line end (and removes the line break) with U+FFFE.
PDFIUM_LINE_HYPHEN = "\ufffe"

_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
              "\ufb06": "st"}
_LIGATURE_TABLE = str.maketrans(_LIGATURES)

# Spaces other than U+0020: a quote typed or copied by a reader has a plain space there.
_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
# Soft hyphens, zero-width characters and byte-order marks: invisible on the page.
_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200d\u2060\ufeff]")


def expand_ligatures(text: str) -> str:
    """ﬁ → fi, ﬂ → fl, ﬀ → ff, ﬃ → ffi, ﬄ → ffl, ﬅ/ﬆ → st."""
    return text.translate(_LIGATURE_TABLE)


def drop_invisible(text: str) -> str:
    """Line breaks become \\n; soft hyphens, zero-width characters, NULs and other control characters go;
    Unicode spaces become plain spaces. Tabs and line breaks stay; PDFium's line-hyphen mark stays for
    `join_line_break_hyphens`."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _INVISIBLE.sub("", _SPACES.sub(" ", text))
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc")


_WORD = re.compile(r"\w+(?:-\w+)*")


def vocabulary(*texts: str) -> set[str]:
    """The words (hyphenated compounds whole) of texts, lower-cased: evidence for how a split word is spelt.
    Word by word, text by text: a long document's words are never all held in a list at once."""
    return {match.group(0).lower() for text in texts
            for match in _WORD.finditer(text.replace(PDFIUM_LINE_HYPHEN, " "))}


def keeps_hyphen(left: str, right: str, words: set[str]) -> bool:
    """Whether a word split at a line-end hyphen keeps its hyphen when joined.

    The document's own spelling decides where it has one ("recommended" elsewhere → join; "well-known"
    → keep). Otherwise the hyphen is a line-break hyphen only between two lower-case letters:
    "recom-/mended" → "recommended", but "T-/cell", "EF-/1A", "GCK-/MODY" keep theirs.
    """
    joined, hyphenated = f"{left}{right}".lower(), f"{left}-{right}".lower()
    if joined in words and hyphenated not in words:
        return False
    if hyphenated in words and joined not in words:
        return True
    return not (left[-1].islower() and right[0].islower())


_SPLIT_WORD = re.compile(r"(\w+)(?:" + PDFIUM_LINE_HYPHEN + r"|-[ \t]*\n[ \t]*)(\w+)")


def join_line_break_hyphens(text: str, words: set[str] | None = None) -> str:
    """Join words hyphenated across a line break ("recom-\\nmended" → "recommended", "T-\\ncell" → "T-cell");
    `words`: the whole document's vocabulary (default: this text's)."""
    words = vocabulary(text) if words is None else words

    def join(match: re.Match) -> str:
        left, right = match.group(1), match.group(2)
        return f"{left}-{right}" if keeps_hyphen(left, right, words) else f"{left}{right}"

    # A lone hyphen mark that no word follows (end of the text): the hyphen that was printed.
    return _SPLIT_WORD.sub(join, text).replace(PDFIUM_LINE_HYPHEN, "-")


_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(r"(?i)^\s*(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,7})(?:\s*(?:/|of)\s*\d{1,4})?\s*$")
EDGE_LINES = 3   # running heads and footers are looked for among a page's first and last lines


def _running_key(line: str) -> str:
    return " ".join(_DIGITS.sub("#", line).lower().split())


@dataclass(frozen=True)
class PageEdges:
    """What running-head detection needs of a page: the keys of its edge lines, and the key that is all
    there is on the page (None when it holds more than one)."""
    keys: frozenset[str]
    only_key: str | None


def _edge_indexes(count: int) -> set[int]:
    return set(range(min(EDGE_LINES, count))) | set(range(max(count - EDGE_LINES, 0), count))


def page_edges(lines: Sequence[str]) -> PageEdges:
    keys = frozenset(_running_key(lines[i]) for i in _edge_indexes(len(lines)) if lines[i].strip())
    others = {_running_key(line) for line in lines if line.strip()}
    return PageEdges(keys, next(iter(others)) if len(others) == 1 else None)


def running_keys(pages: Sequence[PageEdges], min_pages: int = 3) -> set[str]:
    """The keys of running heads, footers and page numbers: edge lines (among the first or last
    `EDGE_LINES` of a page) that repeat, numbers ignored, on at least `min_pages` pages (on every page
    of a shorter document of two or more pages).

    A line that is all there is on most of the pages it repeats on is their content, not a running
    head (the same text on every page of a short document, a "see legend on previous page" figure page).
    """
    pages_with: Counter[str] = Counter()
    alone_on: Counter[str] = Counter()
    for page in pages:
        pages_with.update(page.keys)
        if page.only_key in page.keys:
            alone_on[page.only_key] += 1
    needed = min(min_pages, len(pages)) if len(pages) >= 2 else len(pages) + 1
    return {key for key, n in pages_with.items() if n >= needed and alone_on[key] * 2 < n}


def drop_running_lines(lines: Sequence[str], running: set[str]) -> list[str]:
    """A page's lines without its running heads and footers (`running_keys`) and edge page numbers."""
    edge = _edge_indexes(len(lines))
    return [line for i, line in enumerate(lines)
            if not (i in edge and line.strip() and (_running_key(line) in running or _PAGE_NUMBER.match(line)))]


def remove_running_lines(pages: Sequence[Sequence[str]], min_pages: int = 3) -> list[list[str]]:
    """Every page without its running heads, footers and page numbers (`running_keys`)."""
    running = running_keys([page_edges(lines) for lines in pages], min_pages)
    return [drop_running_lines(lines, running) for lines in pages]


@dataclass(frozen=True)
class PageLine:
    """A line of a page as extracted, with its horizontal extent in page units."""
    text: str
    left: float
    right: float


def order_columns(lines: Sequence[PageLine], page_width: float, min_lines: int = 4) -> list[PageLine]:
    """Read a two-column page column by column.

    A line lies in the left column when it ends before the middle, in the right one when it starts after
    it; a line across the middle (title, full-width figure, a centred heading) separates blocks. Within
    each block the left column's lines come first, then the right column's, each in extraction order —
    so text extracted line across line is put back in reading order, and text already in column order
    stays as it is. A page with fewer than `min_lines` lines in either column is one column: unchanged.
    """
    middle, margin = page_width / 2, page_width * 0.02

    def side(line: PageLine) -> str:
        if line.left < middle - margin and line.right > middle + margin:
            return "full"
        return "left" if (line.left + line.right) / 2 < middle else "right"

    sides = [side(line) for line in lines]
    if sides.count("left") < min_lines or sides.count("right") < min_lines:
        return list(lines)
    ordered: list[PageLine] = []
    block: list[tuple[str, PageLine]] = []

    def flush() -> None:
        ordered.extend(line for s, line in block if s == "left")
        ordered.extend(line for s, line in block if s == "right")
        block.clear()

    for s, line in zip(sides, lines):
        if s == "full":
            flush()
            ordered.append(line)
        else:
            block.append((s, line))
    flush()
    return ordered


def clean_fragment(text: str) -> str:
    """The character-level rules, for text that is not laid out in pages (titles, HTML, DOCX)."""
    return drop_invisible(expand_ligatures(text)).replace(PDFIUM_LINE_HYPHEN, "-")


def join_pages(pages: Sequence[str], words: set[str]) -> tuple[str, list[int]]:
    """One text from cleaned page texts, and the offset where each page starts.

    Pages are separated by a line break, except where a word is hyphenated across the page break: it
    is joined like any line-break hyphen (the page boundary stays at the start of the next page's text).
    """
    parts: list[str] = []
    starts: list[int] = []
    length = 0
    for page in pages:
        if parts:
            previous = parts[-1]
            split = re.search(r"(\w+)(?:" + PDFIUM_LINE_HYPHEN + r"|-)$", previous)
            follow = re.match(r"\w+", page)
            if split and follow:
                keep = keeps_hyphen(split.group(1), follow.group(0), words)
                parts[-1] = previous[:-1] + ("-" if keep else "")
                length -= 0 if keep else 1
            else:
                parts.append("\n")
                length += 1
        starts.append(length)
        parts.append(page)
        length += len(page)
    text = "".join(parts).replace(PDFIUM_LINE_HYPHEN, "-")
    return text, starts
