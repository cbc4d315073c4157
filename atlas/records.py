"""Input formats for ingestion, read as a stream of raw rows.

Three formats: JSONL records, folders of Markdown/text files, and the BEIR corpus format (so
SciFact's `corpus.jsonl` ingests as is). `iter_raw` streams unparsed batches, `load_rows` decodes
one into flat rows (values as read, unvalidated, so great-expectations sees exactly what the file
said) and `to_records` turns a validated batch into typed `Record`s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import dateutil.parser

Format = Literal["jsonl", "folder", "beir"]
TEXT_SUFFIXES = (".md", ".markdown", ".txt")

# The columns every raw row carries, whatever its format.
COLUMNS = (
    "row", "origin", "external_id", "title", "text", "url", "published_at", "sector",
    "source_name", "source_importance", "source_quality", "source_licence", "source_url", "source_sector",
    "retracted", "withdrawn", "superseded",
)


class InputError(ValueError):
    """The input cannot be read at all (wrong encoding, binary file, malformed JSON line)."""


@dataclass(frozen=True)
class SourceInfo:
    name: str
    importance: int
    quality_score: int
    licence: str
    url: str | None = None
    sector: str | None = "general"   # None: the input did not say (a new source gets "general")


SOURCE_FIELDS = ("importance", "quality_score", "sector", "licence", "url")


class SourceConflictError(ValueError):
    """Input that would change a stored source's metadata; only `atlas sources update` may."""


def source_conflict(stored: SourceInfo, incoming: SourceInfo, origin: str | None) -> SourceConflictError | None:
    """The error for input whose metadata for a known source differs from what is stored, or None."""
    # Only what the input states counts: a row that omits a source's url or sector does not contradict it.
    changed = [f for f in SOURCE_FIELDS if getattr(incoming, f) is not None and getattr(stored, f) != getattr(incoming, f)]
    if not changed:
        return None
    said = ", ".join(f"{f} {getattr(incoming, f)!r} (stored: {getattr(stored, f)!r})" for f in changed)
    flags = " ".join(f"--{f.replace('_score', '').replace('_', '-')} {getattr(incoming, f)!r}" for f in changed)
    return SourceConflictError(
        f"{origin or 'input'}: source {stored.name!r} is stored with other metadata; this input says {said}. "
        f"A source changes only through an explicit, recorded update: atlas sources update {stored.name!r} {flags} "
        f"--reason '…'. Nothing of this batch was written.")


# SciFact abstracts come from S2ORC under ODC-By 1.0; the attribution travels with every row.
SCIFACT_SOURCE = SourceInfo(
    name="SciFact corpus (S2ORC abstracts)",
    importance=4,
    quality_score=4,
    licence="ODC-By-1.0; attribution: allenai/scifact (Wadden et al., 2020)",
    url="https://github.com/allenai/scifact",
    sector="biomedical",
)


@dataclass(frozen=True)
class Record:
    external_id: str
    title: str
    text: str
    source: SourceInfo
    url: str | None = None
    published_at: datetime | None = None
    sector: str = "general"
    retracted: bool = False
    withdrawn: bool = False
    superseded: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    # Identity of a version: the title and text, nothing else. Computed once, at construction
    # (chunking asks for it once per chunk; re-hashing a 4 MB text per chunk made chunking quadratic).
    content_hash: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.title, str) or not isinstance(self.text, str):
            raise TypeError(f"record {self.external_id!r}: title and text must be strings")
        digest = hashlib.sha256()
        digest.update(self.title.encode("utf-8"))
        digest.update(b"\x1f")
        digest.update(self.text.encode("utf-8"))
        object.__setattr__(self, "content_hash", digest.hexdigest())


def _decode(data: bytes, where: str) -> str:
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{where}: binary content (NUL byte at offset {nul}); only UTF-8 text can be ingested")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); re-encode the file as UTF-8"
        ) from None


def _source_columns(source: SourceInfo | dict[str, Any] | None, default: SourceInfo | None) -> dict[str, Any]:
    if isinstance(source, SourceInfo):
        source = source.__dict__
    src = dict(default.__dict__ if default else {})
    src.update({k: v for k, v in (source or {}).items() if v is not None})
    return {
        "source_name": src.get("name"),
        "source_importance": src.get("importance"),
        "source_quality": src.get("quality_score", src.get("quality")),
        "source_licence": src.get("licence", src.get("license")),
        "source_url": src.get("url"),
        "source_sector": src.get("sector"),
    }


def _jsonl_row(obj: dict[str, Any], fmt: Format, default_source: SourceInfo | None) -> dict[str, Any]:
    if fmt == "beir":
        ext_id, text = obj.get("_id"), obj.get("text")
        source_cols = _source_columns(None, default_source or SCIFACT_SOURCE)
    else:
        ext_id, text = obj.get("id"), obj.get("text")
        nested = obj.get("source") if isinstance(obj.get("source"), dict) else {
            "name": obj.get("source_name") or (obj.get("source") if isinstance(obj.get("source"), str) else None),
            "importance": obj.get("source_importance", obj.get("importance")),
            "quality_score": obj.get("source_quality", obj.get("quality_score")),
            "licence": obj.get("source_licence", obj.get("licence")),
            "url": obj.get("source_url"),
        }
        source_cols = _source_columns(nested, default_source)
    sector = obj.get("sector") or source_cols["source_sector"] or "general"   # the document's, else its source's
    title = obj.get("title")
    return {
        # As the file gave them: a number or an object where text belongs is refused by validation.
        "external_id": ext_id,
        "title": "" if title is None else title,
        "text": text,
        "url": obj.get("url"),
        "published_at": obj.get("published_at"),
        "sector": sector,
        **source_cols,
        "retracted": bool(obj.get("retracted", False)),
        "withdrawn": bool(obj.get("withdrawn", False)),
        "superseded": bool(obj.get("superseded", False)),
    }


@dataclass
class RawBatch:
    """Unparsed input: JSONL lines (line number, bytes) or files (relative name, path)."""

    fmt: Format
    name: str              # the input file or folder, for messages
    items: list[tuple[Any, Any]]
    bytes_read: int        # cumulative position in the input, for progress
    bytes_total: int


def _iter_jsonl(path: Path, fmt: Format, batch_size: int) -> Iterator[RawBatch]:
    total = path.stat().st_size
    items: list[tuple[Any, Any]] = []
    position = 0
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            position += len(raw)
            if raw.strip():
                items.append((line_no, raw))
            if len(items) >= batch_size:
                yield RawBatch(fmt, path.name, items, position, total)
                items = []
    if items:
        yield RawBatch(fmt, path.name, items, position, total)


def _iter_folder(root: Path, batch_size: int) -> Iterator[RawBatch]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    if not files:
        raise InputError(f"{root}: no {', '.join(TEXT_SUFFIXES)} files found")
    sizes = [p.stat().st_size for p in files]
    position = 0
    for start in range(0, len(files), batch_size):
        part = files[start:start + batch_size]
        position += sum(sizes[start:start + batch_size])
        yield RawBatch("folder", root.name, [(p.relative_to(root).as_posix(), p) for p in part], position, sum(sizes))


def iter_raw(path: Path, fmt: Format, *, batch_size: int = 1000) -> Iterator[RawBatch]:
    """Stream the input in batches of unparsed items; memory stays proportional to `batch_size`."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if batch_size < 1:
        raise InputError("batch_size must be at least 1")
    if fmt == "folder":
        if not path.is_dir():
            raise InputError(f"{path}: format 'folder' needs a directory")
        return _iter_folder(path, batch_size)
    if fmt not in ("jsonl", "beir"):
        raise InputError(f"unknown format {fmt!r}: choose jsonl, folder or beir")
    if path.is_dir():
        path = path / "corpus.jsonl"
    return _iter_jsonl(path, fmt, batch_size)


def _title_of(text: str, fallback: str) -> str:
    """A Markdown file's first heading, if the file starts with one; else the file name."""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip() or fallback
        if line.strip():
            break
    return fallback


def _folder_row(name: str, path: Path, source: SourceInfo) -> dict[str, Any]:
    text = _decode(Path(path).read_bytes(), name)
    mtime = datetime.fromtimestamp(Path(path).stat().st_mtime, tz=UTC).isoformat()
    return {
        "origin": name, "external_id": name, "title": _title_of(text, Path(name).stem), "text": text, "url": None,
        "published_at": mtime, "sector": source.sector,
        **_source_columns(source, None),
        "retracted": False, "withdrawn": False, "superseded": False,
    }


def load_rows(batch: RawBatch, source: SourceInfo | None = None) -> list[dict[str, Any]]:
    """Decode and normalise one raw batch into flat rows (values as the input gave them)."""
    if batch.fmt == "folder":
        if source is None:
            raise InputError("a folder of files needs a source (name, importance, quality, licence) for all its files")
        return [{"row": i, **_folder_row(name, path, source)} for i, (name, path) in enumerate(batch.items, start=1)]
    rows = []
    for line_no, raw in batch.items:
        where = f"{batch.name}:{line_no}"
        try:
            obj = json.loads(_decode(raw, where))
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{where}: each line must be a JSON object")
        rows.append({"row": line_no, "origin": where, **_jsonl_row(obj, batch.fmt, source)})
    return rows


def scan_ids(path: Path, fmt: Format) -> list[tuple[str, Any]]:
    """(origin, id) of every JSONL/BEIR line, in file order, for the run-wide uniqueness check.

    A folder needs none (its ids are relative file names, unique by construction). Lines that do
    not decode or parse are skipped here: the batch that holds them reports them.
    """
    if fmt == "folder":
        return []
    key = "_id" if fmt == "beir" else "id"
    entries = []
    for batch in iter_raw(path, fmt, batch_size=10_000):
        for line_no, raw in batch.items:
            try:
                obj = json.loads(raw)
            except (ValueError, TypeError):
                continue
            if isinstance(obj, dict) and obj.get(key) is not None:
                entries.append((f"{batch.name}:{line_no}", obj[key]))
    return entries


def detect_format(path: Path) -> Format:
    path = Path(path)
    if path.is_dir():
        return "beir" if (path / "corpus.jsonl").exists() else "folder"
    with path.open("rb") as handle:
        first = handle.readline()
    try:
        return "beir" if "_id" in json.loads(first) else "jsonl"
    except (ValueError, TypeError):
        return "jsonl"


def parse_timestamp(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    # dateutil, the same parser great-expectations uses to judge "parseable".
    parsed = value if isinstance(value, datetime) else dateutil.parser.parse(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def to_records(rows: list[dict[str, Any]]) -> list[Record]:
    """Typed records from rows that passed validation."""
    sources: dict[tuple, SourceInfo] = {}
    records = []
    for row in rows:
        key = (row["source_name"], int(row["source_importance"]), int(row["source_quality"]), row["source_licence"],
               row["source_url"] or None, row.get("source_sector") or None)
        source = sources.setdefault(key, SourceInfo(*key))
        records.append(Record(
            external_id=row["external_id"], title=row["title"] or "", text=row["text"], source=source,
            url=row["url"] or None, published_at=parse_timestamp(row["published_at"]), sector=row["sector"] or "general",
            retracted=bool(row["retracted"]), withdrawn=bool(row["withdrawn"]), superseded=bool(row["superseded"]),
            metadata={"origin": row["origin"]},
        ))
    return records
