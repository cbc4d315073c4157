"""Input formats for ingestion, read as a stream of raw rows.

Three formats: JSONL records, documents (a folder of PDF, HTML, DOCX, Markdown and text files read
by `forum_atlas.ingestion.documents`, or one such file), and the BEIR corpus format (so SciFact's `corpus.jsonl`
ingests as is). `iter_raw` streams unparsed batches, `load_rows` decodes JSONL into flat rows (values
as read, unvalidated, so great-expectations sees exactly what the file said), `load_documents` reads a
batch of files into rows and a typed outcome per file, and `to_records` turns a validated batch into
typed `Record`s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import dateutil.parser

from forum_atlas.ingestion.documents import DEFAULT_MAX_FILE_BYTES, DocumentError, read_document, release_freed_memory
from forum_atlas.ingestion.documents.detect import SNIFF_BYTES
from forum_atlas.ingestion.documents.text import decode_utf8
from forum_atlas.ingestion.sources import SOURCE_DEFAULTS, SOURCE_SCORES, default_source_name

Format = Literal["jsonl", "folder", "beir"]
# A batch of documents holds at most this many bytes of files, however many files `batch_size` allows:
# memory follows the batch, not the folder. Up to four batches are in memory at once (read, two being
# prepared, one being written); at 16 MB a folder of papers peaks ~45 MB lower than at 64 MB
# (bench.documents), for ~10 % of its throughput.
MAX_DOCUMENT_BATCH_BYTES = 16 * 1024 * 1024

# Deepest nesting of arrays and objects a JSON line may have. A record is an object holding at most a source
# object; Python's parser recurses per level and dies near its recursion limit ("maximum recursion depth").
MAX_JSON_DEPTH = 100
# A JSON string (skipped whole: brackets inside text do not nest), or a bracket.
_JSON_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)

# The columns every raw row carries, whatever its format.
COLUMNS = (
    "row", "origin", "external_id", "title", "text", "url", "published_at", "sector",
    "source_name", "source_importance", "source_quality", "source_licence", "source_url", "source_sector",
    "retracted", "withdrawn", "superseded",
)


class InputError(ValueError):
    """The input cannot be read at all (wrong encoding, binary file, malformed JSON line)."""


DOCUMENTS_NEED_SOURCE = "documents need a source (name, importance, quality, licence): see complete_source"


@dataclass(frozen=True)
class SourceInfo:
    name: str
    importance: int
    quality_score: int
    licence: str
    url: str | None = None
    sector: str | None = "general"   # None: the input did not say (a new source gets "general")


SOURCE_FIELDS = ("importance", "quality_score", "sector", "licence", "url")


def complete_source(path: Path, stated: dict[str, Any], stored: SourceInfo | None) -> tuple[SourceInfo, list[str]]:
    """The source of documents with what its ingest left out (None) filled in: the name from the folder, and
    importance, quality and licence from the stored source of that name, else SOURCE_DEFAULTS. Returns it and
    the fields that took a default (not the stored source's own)."""
    values = {k: v for k, v in stated.items() if v is not None}
    defaulted = [] if "name" in values else ["name"]
    name = values.pop("name", None) or default_source_name(path)
    for field_name, default in SOURCE_DEFAULTS.items():
        if field_name not in values:
            if stored is None:
                defaulted.append(field_name)
            values[field_name] = getattr(stored, field_name) if stored else default
    return SourceInfo(name=name, sector=values.pop("sector", None), **values), defaulted


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


def check_stated_sources(stored: Iterable[SourceInfo], stated: dict[str, tuple[str, SourceInfo]]) -> None:
    """Refuse input whose statement of a stored source differs from what is stored (`stated`: name → (origin
    of the row that states it, what it states)), before the run does any work; the batch write checks again."""
    for source in stored:
        origin, incoming = stated[source.name]
        if (conflict := source_conflict(source, incoming, origin)) is not None:
            raise conflict


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
    try:
        return decode_utf8(data, where)
    except DocumentError as exc:
        raise InputError(str(exc)) from None


def _nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON in `text` nests arrays and objects more than `limit` levels deep."""
    if text.count("[") + text.count("{") <= limit:
        return False   # the common case, decided without a scan
    depth = 0
    for token in _JSON_STRING_OR_BRACKET.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def parse_json_line(raw: bytes, where: str) -> Any:
    """The JSON value of one input line, or an InputError that names `where` (file:line) and the reason."""
    text = _decode(raw, where)
    if _nesting_exceeds(text, MAX_JSON_DEPTH):
        raise InputError(f"{where}: JSON nested more than {MAX_JSON_DEPTH} levels deep (arrays and objects within "
                         f"each other); {MAX_JSON_DEPTH} is the most a line may have")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None


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


def file_stamp(path: Path) -> tuple[int, int, int]:
    """What changes when a file is replaced or written: (inode, size, modification time in ns)."""
    stat = Path(path).stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _iter_jsonl(path: Path, fmt: Format, batch_size: int, max_batch_bytes: int | None,
                stamp: tuple[int, int, int] | None) -> Iterator[RawBatch]:
    total = path.stat().st_size
    items: list[tuple[Any, Any]] = []
    position = batch_bytes = 0

    def batch() -> RawBatch:
        # The run's check read the file with this stamp: a file changed since is not what was validated.
        if stamp is not None and file_stamp(path) != stamp:
            raise InputError(f"{path.name} changed after the run checked it (at line {items[0][0]} of the batch "
                             "being read); nothing more was written: run the ingest again")
        return RawBatch(fmt, path.name, items, position, total)

    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            position += len(raw)
            if raw.strip():
                items.append((line_no, raw))
                batch_bytes += len(raw)
            if len(items) >= batch_size or (max_batch_bytes is not None and batch_bytes >= max_batch_bytes):
                yield batch()
                items, batch_bytes = [], 0
    if items:
        yield batch()


def document_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    # Hidden files (.DS_Store, editor swap files) are not documents anyone put there to be read.
    # A symbolic link that is not to a file (dangling, to a folder) is listed too: its outcome says it was skipped.
    files = sorted(p for p in root.rglob("*") if (p.is_file() or p.is_symlink()) and not any(
        part.startswith(".") for part in p.relative_to(root).parts))
    if not files:
        raise InputError(f"{root}: no files found")
    return files


def _iter_folder(root: Path, batch_size: int) -> Iterator[RawBatch]:
    files = document_files(root)
    base = root.parent if root.is_file() else root
    sizes = [p.stat().st_size if p.is_file() else 0 for p in files]
    total, position, start = sum(sizes), 0, 0
    while start < len(files):
        end, batch_bytes = start + 1, sizes[start]
        while end < len(files) and end - start < batch_size and batch_bytes + sizes[end] <= MAX_DOCUMENT_BATCH_BYTES:
            batch_bytes += sizes[end]
            end += 1
        position += batch_bytes
        yield RawBatch("folder", root.name, [(p.relative_to(base).as_posix(), p) for p in files[start:end]], position, total)
        start = end


def iter_raw(path: Path, fmt: Format, *, batch_size: int = 1000, max_batch_bytes: int | None = None,
             stamp: tuple[int, int, int] | None = None) -> Iterator[RawBatch]:
    """Stream the input in batches of unparsed items; memory stays proportional to `batch_size` (and, for
    JSON lines, to `max_batch_bytes`). `stamp`: the JSONL file's `file_stamp` when it was checked; a batch
    read after it changed raises InputError."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if batch_size < 1:
        raise InputError("batch_size must be at least 1")
    if fmt == "folder":
        return _iter_folder(path, batch_size)
    if fmt not in ("jsonl", "beir"):
        raise InputError(f"unknown format {fmt!r}: choose jsonl, folder or beir")
    if path.is_dir():
        path = path / "corpus.jsonl"
    if path.is_file() and not _has_content(path):
        raise InputError(f"{path}: the file is empty or holds only whitespace; there is nothing to ingest")
    return _iter_jsonl(path, fmt, batch_size, max_batch_bytes, stamp)


def _has_content(path: Path, block: int = 1 << 20) -> bool:
    """Whether the file holds anything but whitespace (read until the first byte that is not)."""
    with path.open("rb") as handle:
        while data := handle.read(block):
            if data.strip():
                return True
    return False


@dataclass(frozen=True)
class DocumentOptions:
    """How a batch of files is read: the PDF password, and the limits past which a file is refused."""
    pdf_password: str | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_record_bytes: int | None = None    # of title + text, as validation counts it
    url: str | None = None                 # the source URL of a single file (default: the file's path)


@dataclass(frozen=True)
class FileOutcome:
    """What became of one input file: read (then stored or unchanged), or a failure kind with its reason."""
    file: str
    outcome: str
    detail: str = ""
    pages: int | None = None
    reader: str | None = None

    @property
    def failed(self) -> bool:
        return self.outcome not in ("read", "stored", "unchanged")


def _not_a_file(path: Path) -> DocumentError:
    target = path.readlink()
    what = "a folder" if path.is_dir() else "nothing (dangling)" if not path.exists() else "no regular file"
    return DocumentError("skipped", f"skipped: a symbolic link to {what} ({target}); links to files are read")


def _document_row(name: str, path: Path, source: SourceInfo, options: DocumentOptions,
                  on_page: Callable[[int], None] | None) -> tuple[dict[str, Any], FileOutcome]:
    if not path.is_file():
        raise _not_a_file(path)
    before = file_stamp(path)
    read = read_document(path, password=options.pdf_password, max_file_bytes=options.max_file_bytes, on_page=on_page)
    if file_stamp(path) != before:   # written to while it was read: what was read may be half of either version
        raise DocumentError("changed", "the file changed while it was read (size or modification time); nothing of "
                                       "it was stored: ingest it again once it is written")
    size = len(read.title.encode("utf-8")) + len(read.text.encode("utf-8"))
    if options.max_record_bytes is not None and size > options.max_record_bytes:
        raise DocumentError("too_large", f"above the size limit: its text is {size:,} bytes > {options.max_record_bytes:,}")
    # A date a file claims in the future (a wrong clock where it was made) is no publication date.
    claimed = read.published_at if read.published_at and read.published_at <= datetime.now(UTC) else None
    published = claimed or datetime.fromtimestamp(Path(path).stat().st_mtime, tz=UTC)
    row = {
        "origin": name, "external_id": name, "title": read.title or Path(name).stem, "text": read.text,
        "url": options.url or read.url or Path(path).resolve().as_uri(), "published_at": published.isoformat(),
        "sector": source.sector, **_source_columns(source, None),
        "retracted": False, "withdrawn": False, "superseded": False,
        "document": read.metadata(name),
    }
    return row, FileOutcome(name, "read", pages=read.pages if read.kind in ("pdf",) else None,
                            reader=f"{read.reader} {read.reader_version}")


def load_documents(batch: RawBatch, source: SourceInfo | None, options: DocumentOptions = DocumentOptions(),
                   on_page: Callable[[int], None] | None = None) -> tuple[list[dict[str, Any]], list[FileOutcome]]:
    """Read a batch of files: rows for the ones that became documents, and every file's outcome. A file that
    cannot be read yields no row, only its failure: the rest of the batch goes on."""
    if source is None:
        raise InputError(DOCUMENTS_NEED_SOURCE)
    rows, outcomes = [], []
    for name, path in batch.items:
        try:
            row, outcome = _document_row(name, path, source, options, on_page)
        except DocumentError as exc:
            outcomes.append(FileOutcome(name, exc.kind, str(exc)))
            continue
        except OSError as exc:   # gone since the folder was listed, or not readable by this user
            outcomes.append(FileOutcome(name, "unreadable", f"cannot be read: {exc.strerror or exc}"))
            continue
        rows.append({"row": len(rows) + 1, **row})
        outcomes.append(outcome)
    release_freed_memory()
    return rows, outcomes


def load_rows(batch: RawBatch, source: SourceInfo | None = None) -> list[dict[str, Any]]:
    """Decode and normalise one raw batch of JSONL lines into flat rows (values as the input gave them)."""
    if batch.fmt == "folder":
        raise InputError("a batch of files is read by load_documents")
    return [_line_row(line_no, batch.name, raw, batch.fmt, source) for line_no, raw in batch.items]


def _line_row(line_no: int, name: str, raw: bytes, fmt: Format, source: SourceInfo | None) -> dict[str, Any]:
    where = f"{name}:{line_no}"
    return {"row": line_no, "origin": where, **_jsonl_row(_parse_line(raw, where), fmt, source)}


def _parse_line(raw: bytes, where: str) -> dict[str, Any]:
    obj = parse_json_line(raw, where)
    if not isinstance(obj, dict):
        raise InputError(f"{where}: each line must be a JSON object")
    return obj


# The check reads the input in parts of at most this many rows and bytes: large parts make the validation's
# fixed cost per part small, the bound keeps memory flat however large the rows.
SCAN_ROWS, SCAN_BYTES = 10_000, 16 * 1024 * 1024


@dataclass
class InputScan:
    """The whole input, read once before any batch: the (origin, id) of every JSONL/BEIR line in file order
    (for the run-wide uniqueness check), each source it names as its first row states it, with that row's
    origin, and the file's `file_stamp` as it was read (None for a folder)."""
    ids: list[tuple[str, Any]] = field(default_factory=list)
    sources: dict[str, tuple[str, SourceInfo]] = field(default_factory=dict)
    stamp: tuple[int, int, int] | None = None


def scan_input(path: Path, fmt: Format, source: SourceInfo | None = None,
               check_rows: Callable[[list[dict[str, Any]]], None] | None = None) -> InputScan:
    """Read the whole input before any batch is chunked or embedded, so that what would fail the run after
    minutes of work fails it now: a line that does not decode or parse (InputError), rows that state one
    source differently (SourceConflictError), a folder without a source or without files. `check_rows` is
    given every JSONL/BEIR row, as batches will load them, part by part (validation); a row whose source
    fields validation will refuse (a blank name, an importance outside 1–5) is left to it. A folder's files
    are read by their batch: a bad one fails alone."""
    path = Path(path)
    scan = InputScan()
    if fmt == "folder":
        if source is None:
            raise InputError(DOCUMENTS_NEED_SOURCE)
        document_files(path)
        scan.sources[source.name] = (path.name, source)
        return scan
    file = path / "corpus.jsonl" if path.is_dir() else path
    scan.stamp = file_stamp(file) if file.is_file() else None
    for batch in iter_raw(path, fmt, batch_size=SCAN_ROWS, max_batch_bytes=SCAN_BYTES):
        rows = [_line_row(line_no, batch.name, raw, fmt, source) for line_no, raw in batch.items]
        for row in rows:
            if row["external_id"] is not None:
                scan.ids.append((row["origin"], row["external_id"]))
            if not _states_a_valid_source(row):
                continue
            stated = _source_of(row)
            first = scan.sources.setdefault(stated.name, (row["origin"], stated))[1]
            if (conflict := source_conflict(first, stated, row["origin"])) is not None:
                raise conflict
        if check_rows is not None:
            check_rows(rows)
    return scan


def _states_a_valid_source(row: dict[str, Any]) -> bool:
    return all(isinstance(row[c], str) and row[c].strip() for c in ("source_name", "source_licence")) and all(
        row[c] in SOURCE_SCORES for c in ("source_importance", "source_quality"))


def _source_of(row: dict[str, Any]) -> SourceInfo:
    """The source a row states, as its record will carry it."""
    return SourceInfo(row["source_name"], int(row["source_importance"]), int(row["source_quality"]),
                      row["source_licence"], row["source_url"] or None, row.get("source_sector") or None)


def detect_format(path: Path) -> Format:
    """A folder of files (a BEIR corpus if it holds corpus.jsonl); a file of JSON lines; else one document."""
    path = Path(path)
    if path.is_dir():
        return "beir" if (path / "corpus.jsonl").exists() else "folder"
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if not head.lstrip().startswith(b"{") and path.suffix.lower() not in (".jsonl", ".json"):
        return "folder"
    try:
        first = parse_json_line(head.split(b"\n", 1)[0], f"{path.name}:1")
    except InputError:
        return "jsonl"
    return "beir" if isinstance(first, dict) and "_id" in first else "jsonl"


def parse_timestamp(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    # dateutil, the same parser great-expectations uses to judge "parseable".
    parsed = value if isinstance(value, datetime) else dateutil.parser.parse(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def to_records(rows: list[dict[str, Any]]) -> list[Record]:
    """Typed records from rows that passed validation."""
    sources: dict[SourceInfo, SourceInfo] = {}
    records = []
    for row in rows:
        stated = _source_of(row)
        source = sources.setdefault(stated, stated)
        records.append(Record(
            external_id=row["external_id"], title=row["title"] or "", text=row["text"], source=source,
            url=row["url"] or None, published_at=parse_timestamp(row["published_at"]), sector=row["sector"] or "general",
            retracted=bool(row["retracted"]), withdrawn=bool(row["withdrawn"]), superseded=bool(row["superseded"]),
            metadata={"origin": row["origin"], **row.get("document", {})},
        ))
    return records
