"""Canonical JSON, seals and part digests of evidence snapshots (AUD-3), in plain Python."""

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from forum_atlas.integrity import (
    SnapshotError,
    canonical_json,
    changed_parts,
    part_digests,
    seal,
)
from tests.support.snapshot import part_regions

SNAPSHOT = {
    "retrieval": {"stages": [{"name": "bm25", "hits": [[11, 7.25], [12, 3.5]]}, {"name": "dense", "hits": []}],
                  "params": {"k": 50, "threshold": 0.45}},
    "passages": [{"label": "S1", "chunk_id": 11, "text": "Ofgem approved the “cap-and-floor” regime — in 2024."}],
    "engines": {"draft": "offline 1.0", "rerank": None},
    "query_plan": {"question": "What did Ofgem approve?", "personas": ["technical", "legal_regulatory"],
                   "flags": [True, False]},
    "a": 1,
}


def test_canonical_json_is_sorted_compact_and_keeps_unicode():
    text = canonical_json({"b": [1, 2.5, None], "a": {"z": "é—“x”", "y": True}})
    assert text == '{"a":{"y":true,"z":"é—“x”"},"b":[1,2.5,null]}'


def test_equal_values_give_the_same_text_whatever_the_insertion_order():
    shuffled = {k: SNAPSHOT[k] for k in reversed(list(SNAPSHOT))}
    assert canonical_json(shuffled) == canonical_json(SNAPSHOT)
    assert json.loads(canonical_json(SNAPSHOT)) == SNAPSHOT


def test_tuples_are_written_as_lists():
    assert canonical_json({"t": (1, ("a", None))}) == '{"t":[1,["a",null]]}'


@pytest.mark.parametrize(("value", "message"), [
    ({"at": datetime(2024, 5, 1, tzinfo=UTC)}, r"\$\.at: a datetime is not a JSON-native value \(write it as an ISO string\)"),
    ({"x": [1, Decimal("1.5")]}, r"\$\.x\[1\]: a Decimal is not a JSON-native value"),
    ({"s": {1, 2}}, r"\$\.s: a set is not a JSON-native value"),
    ({"m": {1: "one"}}, r"\$\.m: key 1 is a int, not a str"),
    ({"n": float("nan")}, r"\$\.n: nan is not allowed"),
    ({"n": [float("inf")]}, r"\$\.n\[0\]: inf is not allowed"),
    ({"odd key": b"bytes"}, r"\$\['odd key'\]: a bytes is not a JSON-native value"),
    ({"s": "\ud800"}, r"not valid Unicode"),
])
def test_non_json_native_values_are_refused_with_their_path(value, message):
    with pytest.raises(SnapshotError, match=message):
        canonical_json(value)


def test_seal_is_sha256_hex_of_the_utf8_text():
    text = canonical_json(SNAPSHOT)
    assert seal(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert len(seal("")) == 64


def test_part_digests_seal_each_top_level_part():
    digests = part_digests(SNAPSHOT)
    assert set(digests) == set(SNAPSHOT)
    assert digests["engines"] == seal('{"draft":"offline 1.0","rerank":null}')
    changed = {**SNAPSHOT, "engines": {"draft": "offline 1.1", "rerank": None}}
    assert {k for k, v in part_digests(changed).items() if v != digests[k]} == {"engines"}
    with pytest.raises(SnapshotError, match="JSON object"):
        part_digests([1, 2])


def test_an_untouched_text_has_no_changed_part():
    assert changed_parts(canonical_json(SNAPSHOT), part_digests(SNAPSHOT)) == []
    assert changed_parts("{}", {}) == []


def test_changing_any_single_character_names_the_part_it_belongs_to():
    text = canonical_json(SNAPSHOT)
    digests = part_digests(SNAPSHOT)
    regions = part_regions(SNAPSHOT)
    assert regions[-1][2] == len(text)
    for i, char in enumerate(text):
        flipped = text[:i] + chr(ord(char) ^ 1) + text[i + 1:]
        expected = next(part for part, start, end in regions if start <= i < end)
        problems = changed_parts(flipped, digests)
        assert problems, (i, char)
        assert problems[0][0] == expected, (i, char, problems)
        # Parts before it read back intact; parts after it are either intact or marked unchecked.
        named = [part for part, what in problems if not what.startswith("not checked")]
        assert named == [expected], (i, char, problems)


def test_unparseable_text_still_names_the_part():
    text = canonical_json(SNAPSHOT)
    broken = text.replace('"stages":[', '"stages":[[', 1)
    problems = changed_parts(broken, part_digests(SNAPSHOT))
    assert problems[0][0] == "retrieval" and "no longer parses" in problems[0][1]
    assert problems[1:] == []  # retrieval is the last part in canonical order
    assert changed_parts(text + " ", part_digests(SNAPSHOT)) == [("retrieval", "text was added after the snapshot's end")]
    cut = changed_parts(text[: len(text) // 3], part_digests(SNAPSHOT))
    assert cut[0][1] != "" and any(what.startswith("not checked") for _, what in cut)
