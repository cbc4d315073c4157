"""Canonical JSON and the seal of an evidence snapshot (AUD-3), in plain Python.

A snapshot is stored as one canonical text: keys sorted, no insignificant whitespace, UTF-8 as is
(no \\u escapes for non-ASCII), no NaN or infinities. Its seal is the sha256 hex of that text's
UTF-8 bytes, and each top-level part gets its own digest (the sha256 of the part's canonical
text), so that a changed snapshot can say *which* part changed.

Only JSON-native values are accepted: dict with str keys, list (a tuple is written as a list),
str, int, float (finite), bool and None. Anything else (datetimes, Decimals, sets, dataclasses,
non-str keys, which json would silently turn into strings) is refused with the path to it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any


class SnapshotError(ValueError):
    """The value cannot be written as canonical JSON (a non-JSON-native value, NaN, bad text)."""


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SnapshotError(f"{path}: {value!r} is not allowed in canonical JSON (only finite numbers)")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SnapshotError(
                    f"{path}: key {key!r} is a {type(key).__name__}, not a str "
                    "(JSON object keys are strings; convert it explicitly)")
            _check(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    hint = " (write it as an ISO string)" if hasattr(value, "isoformat") else ""
    raise SnapshotError(f"{path}: a {type(value).__name__} is not a JSON-native value{hint}")


def canonical_json(obj: Any) -> str:
    """The one text of a JSON-native value: sorted keys, separators (",", ":"), UTF-8 kept as is,
    no NaN/Infinity. Raises SnapshotError for anything that is not JSON-native."""
    _check(obj, "$")
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not storable, not hashable as UTF-8
        raise SnapshotError(f"the value holds text that is not valid Unicode ({exc.reason} at {exc.start})") from exc
    return text


def seal(text: str) -> str:
    """sha256 hex of the text's UTF-8 bytes (what forum.evidence_snapshots' CHECK computes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def part_digests(obj: Mapping[str, Any]) -> dict[str, str]:
    """{top-level key: seal of that part's canonical JSON}."""
    if not isinstance(obj, Mapping):
        raise SnapshotError(f"a snapshot is a JSON object, not a {type(obj).__name__}")
    return {key: seal(canonical_json(value)) for key, value in canonical_parts(obj)}


def canonical_parts(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The top-level (key, value) pairs in canonical order."""
    _check(dict(obj), "$")
    return sorted(obj.items())


def changed_parts(text: str, digests: Mapping[str, str]) -> list[tuple[str, str]]:
    """Which top-level parts of a stored canonical text no longer match their recorded digests:
    a list of (part, what is wrong), empty when every part matches.

    Works on text that no longer parses: the text is read part by part in canonical order
    (`{"a":…,"b":…}`), and the first part whose key, value or separator cannot be read is named;
    the parts after it cannot be checked and are reported as such. Every character of the text
    belongs to exactly one part: the opening brace and a part's key, colon, value and the
    separator after it (the comma, or the closing brace) belong to that part."""
    keys = sorted(digests)
    problems: list[tuple[str, str]] = []
    if not keys:
        return [] if text == "{}" else [("(whole snapshot)", "the text is not the empty object it was recorded as")]
    decoder = json.JSONDecoder()
    pos = 0
    for index, key in enumerate(keys):
        opener = "{" if index == 0 else ""
        head = opener + json.dumps(key, ensure_ascii=False) + ":"
        if not text.startswith(head, pos):
            problems.append((key, "the part's key or the text before it was changed"))
            break
        start = pos + len(head)
        try:
            _, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            problems.append((key, f"the part no longer parses ({exc.msg} at character {exc.pos})"))
            break
        last = index == len(keys) - 1
        separator = "}" if last else ","
        if seal(text[start:end]) != digests[key]:
            problems.append((key, "the part's content differs from its recorded digest"))
        if not text.startswith(separator, end):
            if not problems or problems[-1][0] != key:
                problems.append((key, f"the {separator!r} after the part was changed"))
            break
        pos = end + 1
    else:
        if pos != len(text):
            problems.append((keys[-1], "text was added after the snapshot's end"))
        return problems
    checked = {part for part, _ in problems}
    failed_at = keys.index(problems[-1][0])
    problems.extend((key, "not checked: an earlier part could not be read")
                    for key in keys[failed_at + 1:] if key not in checked)
    return problems
