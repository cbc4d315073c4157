"""The audit verification, recomputed outside the database (AUD-5, issue 25).

The database writes the evidence (sql/032, sql/120): at insert, a statement trigger records each
protected row's content digest in forum.content_digests; the transaction's next audit event anchors
those digests (per table: rows and a digest over "row_id:digest"); every event's row_hash chains
it to the one before. Verifying must not trust the database's code — a superuser can replace any
stored function — so this module recomputes all of it from raw values: each row's digest, each
anchor, each chain link, and compares the chain with a head exported earlier.

Digest of a row: sha256 over PostgreSQL's text form of ROW(content columns), each column first put
in a form no session setting changes (see `Kind`). `record_text` reproduces record_out.

Evidence snapshots (AUD-3) are sealed here too: their canonical JSON, seal and part digests, and the
digests of a brief's rows that its BRIEF_PERSISTED event records (`brief_row_digests`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import Enum
from functools import cached_property
from operator import itemgetter
from typing import Any

GENESIS = "genesis"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_ZERO = date(2000, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
# record_out quotes an element that is empty or holds one of these (isspace() in the C sense).
_NEEDS_QUOTES = re.compile(r'["\\(),\t\n\v\f\r ]')


class Kind(Enum):
    """How a column enters its row's digest (the SQL side: forum.epoch_us, day_number, float_bits,
    sha256_text, and `::text` for jsonb)."""

    VALUE = "value"    # integers and text: their own text form
    BOOL = "bool"      # 't' / 'f'
    MOMENT = "moment"  # timestamptz: microseconds since the Unix epoch
    DAY = "day"        # date: days since 2000-01-01
    FLOAT = "float"    # double precision: its 8 IEEE bytes, big-endian, in hex
    JSON = "json"      # jsonb: its text form, as the database prints it (read as ::text)
    SHA = "sha"        # text that enters by its sha256 (a snapshot's canonical text)


@dataclass(frozen=True)
class Protected:
    """A table whose rows are digested: its id column, its content columns in digest order, and the
    columns that name a row to a reader besides its id."""

    table: str
    id_column: str
    columns: tuple[tuple[str, Kind], ...]
    names: tuple[str, ...] = ()
    # Trailing columns that enter the digest only when one of them holds a value: a row added before
    # they existed, or not using them, digests as it did (sql/110's score columns).
    when_present: tuple[tuple[str, Kind], ...] = ()

    @cached_property
    def digest_columns(self) -> tuple[tuple[str, Kind], ...]:
        return self.columns + self.when_present

    @property
    def text_columns(self) -> tuple[str, ...]:
        """Columns read as their database text form rather than as values."""
        return tuple(c for c, kind in self.digest_columns if kind is Kind.JSON)

    @cached_property
    def read_columns(self) -> tuple[str, ...]:
        """What a reader selects, in this order: the id, the content columns, the naming columns."""
        return tuple(dict.fromkeys([self.id_column, *(c for c, _ in self.digest_columns), *self.names]))

    @cached_property
    def _content(self) -> itemgetter:
        return itemgetter(*(self.read_columns.index(c) for c, _ in self.digest_columns))

    @cached_property
    def converters(self) -> tuple[Callable[[Any], str], ...]:
        return tuple(_TO_TEXT[kind] for _, kind in self.digest_columns)

    def content_of(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """The content values of a row read as `read_columns`, in digest order."""
        return self._content(row)


V, B, M, D, F, J = Kind.VALUE, Kind.BOOL, Kind.MOMENT, Kind.DAY, Kind.FLOAT, Kind.JSON

# Must list the same columns, in the same order and forms, as the forum.content_digest overloads.
PROTECTED: tuple[Protected, ...] = (
    Protected("documents", "document_id", (
        ("document_id", V), ("source_id", V), ("external_id", V), ("version", V), ("content_hash", V), ("title", V),
        ("body", V), ("url", V), ("published_at", M), ("sector", V), ("metadata", J), ("ingested_at", M)),
        ("external_id", "version")),
    Protected("chunks", "chunk_id", (
        ("chunk_id", V), ("chunk_key", V), ("document_id", V), ("ordinal", V), ("start_char", V), ("end_char", V),
        ("heading", V), ("body", V)), ("chunk_key",)),
    Protected("series_vintages", "vintage_id", (
        ("vintage_id", V), ("series_id", V), ("label", V), ("fetched_at", M), ("recorded_at", M), ("connector", V),
        ("origin", V), ("content_hash", V), ("row_count", V), ("first_date", D), ("last_date", D), ("partial", B)),
        ("series_id", "label")),
    Protected("series_observations", "observation_id", (
        ("observation_id", V), ("vintage_id", V), ("observation_date", D), ("value", F)),
        ("vintage_id", "observation_date")),
    Protected("forecasts", "forecast_id", (
        ("forecast_id", V), ("question", V), ("requested_via", V), ("issued_at", M), ("recorded_at", M),
        ("confidence_target", F), ("n_samples", V), ("seed", V), ("base_rate", F), ("probability", F),
        ("ci_low", F), ("ci_high", F), ("ci_method", V), ("ci_basis", V), ("distribution", J), ("drivers", J),
        ("engine", J), ("flow_run_id", V))),
    Protected("forecast_bindings", "forecast_id", (
        ("forecast_id", V), ("question_key", V), ("series_id", V), ("comparator", V), ("threshold", F),
        ("reference_date", D), ("target_date", D), ("deadline", M), ("bound_at", M), ("issue_vintage_id", V)),
        ("question_key",)),
    Protected("forecast_scores", "score_id", (
        ("score_id", V), ("forecast_id", V), ("scoring_version", V), ("vintage_id", V), ("status", V),
        ("outcome", V), ("probability", F), ("brier", F), ("target_date", D), ("target_present", B),
        ("target_value", F), ("reference_date", D), ("reference_present", B), ("reference_value", F),
        ("reason", V), ("scored_at", M)), ("forecast_id", "scoring_version", "vintage_id"),
        (("log_score", F), ("deadline_vintage_id", V), ("deadline_outcome", V))),
    Protected("evidence_snapshots", "snapshot_id", (
        ("snapshot_id", V), ("canonical", Kind.SHA), ("seal", V), ("part_digests", J), ("created_at", M))),
    Protected("briefs", "brief_id", (
        ("brief_id", V), ("question", V), ("created_at", M), ("recorded_at", M), ("snapshot_id", V), ("audit", J),
        ("engines", J), ("extractive", B), ("redactions", V), ("flow_run_id", V), ("plan", J))),
    Protected("brief_sections", "section_id", (
        ("section_id", V), ("brief_id", V), ("ordinal", V), ("kind", V), ("role", V), ("topic", V),
        ("insufficient", V), ("attempts", V), ("engine", V)), ("brief_id", "ordinal")),
    Protected("brief_claims", "claim_id", (
        ("claim_id", V), ("brief_id", V), ("section_ordinal", V), ("ordinal", V), ("text", V), ("claimed_tag", V),
        ("tag", V), ("chunk_id", V), ("source_label", V), ("quote", V), ("verdict", V), ("failed", V),
        ("detail", V)), ("brief_id",)),
    Protected("citations", "citation_id", (
        ("citation_id", V), ("brief_id", V), ("claim_id", V), ("chunk_id", V), ("document_id", V),
        ("document_version", V), ("source_id", V), ("quote", V), ("importance", V), ("quality_score", V),
        ("recency_label", V), ("published_at", M), ("cited_at", M)), ("brief_id", "claim_id")),
    Protected("provider_calls", "call_id", (
        ("call_id", V), ("brief_id", V), ("ordinal", V), ("stage", V), ("provider", V), ("version", V),
        ("input_digest", V), ("outcome", V), ("latency_ms", F), ("attempts", V), ("detail", V), ("prompt_hash", V),
        ("flow_run_id", V), ("task_run_id", V), ("recorded_at", M)), ("brief_id", "ordinal")),
)
PROTECTED_BY_TABLE: Mapping[str, Protected] = {p.table: p for p in PROTECTED}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def epoch_us(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


_FLOAT = struct.Struct(">d")
_TO_TEXT: Mapping[Kind, Callable[[Any], str]] = {
    Kind.VALUE: str,
    Kind.BOOL: lambda v: "t" if v else "f",
    Kind.MOMENT: lambda v: str(epoch_us(v)),
    Kind.DAY: lambda v: str((v - _DAY_ZERO).days),
    Kind.FLOAT: lambda v: _FLOAT.pack(v).hex(),
    Kind.JSON: str,  # already the database's text
    Kind.SHA: sha256_text,
}


def _field(element: str | None) -> str:
    if element is None:
        return ""
    if element and _NEEDS_QUOTES.search(element) is None:
        return element
    return '"' + element.replace("\\", "\\\\").replace('"', '""') + '"'


def record_text(elements: Iterable[str | None]) -> str:
    """PostgreSQL's record_out: NULL is nothing; an element that is empty or holds a quote, a
    backslash, a parenthesis, a comma or white space is double-quoted, with " and \\ doubled."""
    return "(" + ",".join(map(_field, elements)) + ")"


def content_digest(spec: Protected, values: Sequence[Any]) -> str:
    """The digest forum.content_digest computes for a row, given its content values in digest
    order (jsonb columns as the database's text)."""
    if spec.when_present and all(v is None for v in values[len(spec.columns):]):
        values = values[:len(spec.columns)]
    return sha256_text(record_text([None if v is None else convert(v)
                                    for convert, v in zip(spec.converters, values)]))


def event_row_hash(prev_hash: str, event_id: int, occurred_at: datetime, kind: str, flow_run_id: str | None,
                   payload_text: str, digests_text: str | None) -> str:
    """forum.event_row_hash: the link over the event's fields and, when it anchors digests, them."""
    linked = sha256_text("\x1f".join((prev_hash, str(event_id), str(epoch_us(occurred_at)), kind, flow_run_id or "",
                                      payload_text)))
    return linked if digests_text is None else sha256_text(linked + "\x1f" + digests_text)


def anchor_of(entries: Iterable[tuple[int, str]]) -> dict[str, Any]:
    """forum.digest_anchor for one table: rows, and sha256 over "row_id:digest" by row id."""
    ordered = sorted(entries)
    return {"rows": len(ordered), "digest": sha256_text(",".join(f"{row_id}:{digest}" for row_id, digest in ordered))}


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One thing that does not verify: which table and row, or which event, and what differs."""

    table_name: str | None
    row_id: int | None
    event_id: int | None
    problem: str

    def as_dict(self) -> dict[str, Any]:
        return {"table_name": self.table_name, "row_id": self.row_id, "event_id": self.event_id,
                "problem": self.problem}

    def as_link(self) -> dict[str, Any]:
        """A finding about a chain link: the event and the problem."""
        return {"event_id": self.event_id, "problem": self.problem}


@dataclass(frozen=True)
class Event:
    """An audit event as stored: payload and digests as the database prints their jsonb."""

    event_id: int
    prev_hash: str
    row_hash: str
    occurred_at: datetime
    kind: str
    flow_run_id: str | None
    payload: str
    digests: str | None


@dataclass(frozen=True)
class RecordedDigest:
    table_name: str
    row_id: int
    digest: str
    xact: int
    seq: int


def chain_findings(events: Iterable[Event], previous_hash: str = GENESIS) -> Iterator[Finding]:
    """Each event against its predecessor and its own content, in id order; `previous_hash` is the
    row_hash of the event before the first one given."""
    expected_prev = previous_hash
    for e in events:
        if e.prev_hash != expected_prev:
            yield Finding(None, None, e.event_id, "prev_hash does not match the preceding row "
                                                  f"(broken link: expected {expected_prev[:12]}…, found {e.prev_hash[:12]}…)")
        elif e.row_hash != event_row_hash(e.prev_hash, e.event_id, e.occurred_at, e.kind, e.flow_run_id, e.payload,
                                          e.digests):
            yield Finding(None, None, e.event_id, "row_hash does not match the row content")
        expected_prev = e.row_hash


@dataclass(frozen=True)
class _Anchor:
    event_id: int
    xact: int
    after: int
    through: int
    tables: dict[str, Any]


class DigestLedger:
    """The recorded digests and the events' anchors, checked against each other; rows are then
    checked one table at a time with `row_findings`, so that only the digests are held in memory."""

    def __init__(self, events_with_digests: Iterable[Event], recorded: Iterable[RecordedDigest]):
        self.findings: list[Finding] = []
        anchors: dict[int, list[_Anchor]] = defaultdict(list)
        for e in events_with_digests:
            d = json.loads(e.digests)
            anchors[int(d["xact"])].append(_Anchor(e.event_id, int(d["xact"]), int(d["after"]), int(d["through"]),
                                                   d.get("tables") or {}))
        self.by_table: dict[str, dict[int, tuple[str, int | None]]] = defaultdict(dict)  # row_id -> (digest, event)
        anchored: dict[int, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        for r in recorded:
            anchor = next((a for a in anchors.get(r.xact, ()) if a.after < r.seq <= a.through), None)
            self.by_table[r.table_name][r.row_id] = (r.digest, anchor.event_id if anchor else None)
            if anchor is None:
                self.findings.append(Finding(r.table_name, r.row_id, None,
                                             "its digest is not anchored in the audit chain"))
            else:
                anchored[anchor.event_id][r.table_name].append((r.row_id, r.digest))
        for anchor in sorted((a for group in anchors.values() for a in group), key=lambda a: a.event_id):
            now = {table: anchor_of(entries) for table, entries in anchored[anchor.event_id].items()}
            for table in sorted(set(anchor.tables) | set(now)):
                was, is_ = anchor.tables.get(table), now.get(table)
                if was == is_:
                    continue
                if was is None:
                    problem = f"digests of {is_['rows']} rows were added to what this event anchors"
                elif is_ is None:
                    problem = f"the event anchors {was['rows']} rows' digests; none of them is left"
                elif was["rows"] != is_["rows"]:
                    problem = f"the event anchors {was['rows']} rows' digests; {is_['rows']} are left"
                else:
                    problem = f"the {was['rows']} digests this event anchors were altered"
                self.findings.append(Finding(table, None, anchor.event_id, problem))

    def row_findings(self, spec: Protected, rows: Iterable[Sequence[Any]]) -> tuple[list[Finding], int]:
        """(findings, rows read) for one table, its rows read as `spec.read_columns`: each row as it
        is now against the digest recorded when it was written; recorded digests whose row is gone."""
        findings: list[Finding] = []
        recorded = self.by_table.get(spec.table, {})
        seen: set[int] = set()
        for row in rows:
            row_id = row[0]
            seen.add(row_id)
            digest = content_digest(spec, spec.content_of(row))
            entry = recorded.get(row_id)
            if entry is not None and entry[0] == digest:
                continue
            named = "".join(f", {c} {_shown(row[spec.read_columns.index(c)])}" for c in spec.names)
            if entry is None:
                findings.append(Finding(spec.table, row_id, None,
                                        f"no digest was recorded for this row (written with triggers disabled{named})"))
            else:
                findings.append(Finding(spec.table, row_id, entry[1],
                                        f"content differs from the digest recorded when it was written "
                                        f"(recorded {entry[0][:12]}…, now {digest[:12]}…{named})"))
        for row_id in sorted(set(recorded) - seen):
            findings.append(Finding(spec.table, row_id, recorded[row_id][1], "row is missing (deleted after it was written)"))
        return findings, len(seen)

    def unrecomputed_tables(self) -> list[str]:
        """Tables with recorded digests that this version does not know how to recompute (their
        anchors are still checked)."""
        return sorted(set(self.by_table) - set(PROTECTED_BY_TABLE))


# ---------------------------------------------------------------- the exported head


@dataclass(frozen=True)
class ChainHead:
    """The last event of the audit log: kept outside the database, it anchors the whole chain."""

    event_id: int
    row_hash: str

    def __str__(self) -> str:
        return f"{self.event_id}:{self.row_hash}"

    @classmethod
    def parse(cls, text: str) -> ChainHead:
        """`ID:HASH` (as `atlas audit head` prints it) or a bare `HASH` (a ChainHead with event_id 0)."""
        text = text.strip()
        ident, _, digest = text.rpartition(":")
        digest = digest.lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"not a chain head: {text!r} (expected ID:HASH or HASH, HASH being 64 hex digits)")
        if ident and not ident.isdigit():
            raise ValueError(f"not a chain head: {text!r} (the event id before ':' must be a number)")
        return cls(int(ident) if ident else 0, digest)


def head_problem(last: ChainHead | None, hashes: Mapping[int, str], head: ChainHead) -> str | None:
    """None when the chain still reaches the exported head, else what is wrong. `hashes` maps each
    event id to its row_hash, `last` is the log's last event. The chain itself is verified
    separately: a head that is still there, on a chain that verifies, vouches for every event up
    to it."""
    if head.event_id:
        if head.event_id not in hashes:
            return (f"event {head.event_id} of the exported head is missing (the log now ends at "
                    f"{last.event_id if last else 'nothing'}): events were deleted")
        if hashes[head.event_id] != head.row_hash:
            return (f"event {head.event_id} no longer has the exported head's row_hash: the chain up to it "
                    "was rewritten")
        return None
    if head.row_hash not in hashes.values():
        return "no event has the exported head's row_hash: events were deleted or the chain was rewritten"
    return None


def _shown(value: Any) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


# ---------------------------------------------------------------- evidence snapshots: canonical JSON and seals
# Canonical JSON and the seal of an evidence snapshot (AUD-3), in plain Python.
#
# A snapshot is stored as one canonical text: keys sorted, no insignificant whitespace, UTF-8 as is
# (no \\u escapes for non-ASCII), no NaN or infinities. Its seal is the sha256 hex of that text's
# UTF-8 bytes, and each top-level part gets its own digest (the sha256 of the part's canonical
# text), so that a changed snapshot can say *which* part changed.
#
# Only JSON-native values are accepted: dict with str keys, list (a tuple is written as a list),
# str, int, float (finite), bool and None. Anything else (datetimes, Decimals, sets, dataclasses,
# non-str keys, which json would silently turn into strings) is refused with the path to it.


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
    return sha256_text(text)


def part_digests(obj: Mapping[str, Any]) -> dict[str, str]:
    """{top-level key: seal of that part's canonical JSON}."""
    if not isinstance(obj, Mapping):
        raise SnapshotError(f"a snapshot is a JSON object, not a {type(obj).__name__}")
    return {key: seal(canonical_json(value)) for key, value in canonical_parts(obj)}


def canonical_parts(obj: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The top-level (key, value) pairs in canonical order."""
    _check(dict(obj), "$")
    return sorted(obj.items())


def brief_row_digests(brief: list, sections: list, claims: list, citations: list, calls: list) -> dict[str, str]:
    """The digest of each group of a brief's rows (as written, or as read back), as its BRIEF_PERSISTED
    event records them."""
    return {
        "brief": seal(canonical_json(brief)),
        "sections": seal(canonical_json([list(r) for r in sections])),
        "claims": seal(canonical_json([list(r) for r in claims])),
        "citations": seal(canonical_json([list(r) for r in citations])),
        "provider_calls": seal(canonical_json([list(r) for r in calls])),
    }


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
