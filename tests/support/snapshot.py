"""Where each top-level part of a snapshot lies in its canonical text: tamper tests flip a byte there and
expect that part to be named."""

from __future__ import annotations

import json

from forum_atlas.integrity import canonical_json


def part_regions(obj: dict) -> list[tuple[str, int, int]]:
    """(part, start, end) of every top-level part of the canonical text: the opening brace and a
    part's key, colon, value and following separator belong to that part."""
    regions, pos = [], 0
    keys = sorted(obj)
    for i, key in enumerate(keys):
        piece = ("{" if i == 0 else "") + json.dumps(key, ensure_ascii=False) + ":" + canonical_json(obj[key]) + (
            "}" if i == len(keys) - 1 else ",")
        regions.append((key, pos, pos + len(piece)))
        pos += len(piece)
    return regions
