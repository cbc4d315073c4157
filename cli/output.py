"""Plain-text tables for the terminal, the argument types commands share, and the stream that keeps
control characters of user and source text off the terminal."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone
from typing import TextIO

# C0 controls but tab and newline (ESC opens escape sequences, BEL rings, CR overwrites the line), DEL, C1
# controls (0x9B is a one-byte ESC [), and the bidirectional overrides that reorder what is shown.
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` without the characters that would drive the terminal instead of being shown."""
    return _TERMINAL_CONTROLS.sub("", text)


class OutputClosed(Exception):
    """Whoever read the command's standard output stopped reading (`atlas … | head`): not a failure."""


class TerminalSafeStream:
    """Standard output for a command: questions, titles, passages and briefs come from users and sources,
    and whatever a command prints passes here, so none of them can drive the terminal."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            self._stream.write(terminal_safe(text))
        except BrokenPipeError:
            raise OutputClosed from None
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise OutputClosed from None

    def __getattr__(self, name: str):   # flush, isatty, encoding, fileno: the wrapped stream's
        return getattr(self._stream, name)


def instant(text: str) -> datetime:
    """An ISO date or date-time argument; naive values are UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (use YYYY-MM-DD or an ISO date-time)") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def add_source_filters(parser: argparse.ArgumentParser) -> None:
    """The options that narrow which sources retrieval may return: sector and publication window."""
    parser.add_argument("--sector", action="append", dest="sectors", help="only this sector (repeatable)")
    parser.add_argument("--since", type=instant, help="only sources published on or after this date")
    parser.add_argument("--until", type=instant, help="only sources published before this date")


def day(text: str) -> date:
    """A YYYY-MM-DD argument."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


# A cell is one line: a line break or tab inside a value (a file name may hold one) is shown escaped.
_CELL_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v).translate(_CELL_ESCAPES) for v in row]
                                           for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
