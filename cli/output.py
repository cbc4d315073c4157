"""Plain-text tables for the terminal, and the argument types commands share."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone


def instant(text: str) -> datetime:
    """An ISO date or date-time argument; naive values are UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (use YYYY-MM-DD or an ISO date-time)") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def day(text: str) -> date:
    """A YYYY-MM-DD argument."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from None


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
