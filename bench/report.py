"""How every benchmark prints its results: one table helper, so that columns line up the same way in
every bench and a bench states only its headers and rows (numbers formatted by the bench)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

_NUMBER = re.compile(r"^[-+−]?[\d,]*\.?\d+(e[-+]?\d+)?\s*(%|×|x|s|ms|MB)?$")


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A text table: a rule under the headers, numeric cells right-aligned, text left-aligned."""
    cells = [[_cell(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_NUMBER.match(r[i]) or not r[i] for r in cells[1:]) and len(cells) > 1
               for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)).rstrip()

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths), *(line(r) for r in cells[1:])])


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The same rows as a Markdown table, ready for BENCHMARKS.md."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def load_line() -> str:
    """The machine's load beside every figure: these machines are small and shared."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"
