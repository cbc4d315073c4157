"""Turn validated records into what the database stores: document versions, chunks, embeddings.

Pure: the flow's tasks call `plan_chunks` then `embed_chunks`; `store.documents.write_prepared`
writes the result in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from forum_atlas.embeddings.base import Embedder
from forum_atlas.ingestion.chunking import Chunk, ChunkingOptions, chunk_key, chunk_text
from forum_atlas.ingestion.records import FileOutcome, RawBatch, Record

# An HNSW insert into a built index costs about this many times a vector's share of building the index
# over all vectors at once (pgvector 0.8, hashed embeddings of random-word text: ~8 on 10k vectors into 10k,
# under load; BENCHMARKS.md "One large record"). So rebuilding is cheaper than inserting `new` vectors into
# an index over `stored` ones when stored + new < 8 × new.
INSERT_TO_BUILD_COST = 8
# Texts per embedder call when someone watches the embedding (`on_embedded`): progress between calls, at the cost
# of a call boundary per slice (slices are cut from the whole batch sorted by length, so they pad as little).
EMBED_SLICE = 256


def rebuild_is_cheaper(stored_vectors: int, new_vectors: int) -> bool:
    """Whether dropping the HNSW index and building it once after the load costs less than inserting the
    load's vectors into it one by one (a load adding nothing keeps the index)."""
    return new_vectors > 0 and stored_vectors + new_vectors < INSERT_TO_BUILD_COST * new_vectors


def expected_chunks(text_bytes: int, options: ChunkingOptions) -> int:
    """About how many chunks `text_bytes` of text make: a chunk starts every max_chars - overlap_chars."""
    return text_bytes // max(options.max_chars - options.overlap_chars, 1)


@dataclass(frozen=True)
class InputCheck:
    """What the run's check learnt of the whole input: the JSONL file's stamp as validated (None: a folder),
    and the UTF-8 bytes of title + text that the database does not hold yet (None: unknown, a folder)."""
    stamp: tuple[int, int, int] | None = None
    new_bytes: int | None = None


@dataclass(frozen=True)
class PreparedChunk:
    key: str
    chunk: Chunk


@dataclass
class PreparedDocument:
    record: Record
    chunks: list[PreparedChunk]


def embedding_text(title: str, body: str) -> str:
    """What gets embedded for a chunk: the title as context, then the chunk text (matches the lexical index)."""
    return f"{title}\n{body}" if title else body


@dataclass(frozen=True)
class StoredChunk:
    """A chunk already in the database that has no vector from the run's embedder yet."""
    chunk_id: int
    text: str   # embedding_text(heading, body)


def stored_chunks(rows: Iterable[Mapping[str, Any]]) -> list[StoredChunk]:
    """Stored chunks (rows of chunk_id, heading, body) as the embedder reads them."""
    return [StoredChunk(r["chunk_id"], embedding_text(r["heading"], r["body"])) for r in rows]


@dataclass
class PreparedBatch:
    documents: list[PreparedDocument]
    stored_chunks: list[StoredChunk] = field(default_factory=list)
    embedder_name: str = ""
    embedder_engine: str = ""
    embedder_version: str = ""
    dim: int = 0
    embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    stored_embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))

    @property
    def chunk_count(self) -> int:
        return sum(len(d.chunks) for d in self.documents)

    def chunk_texts(self) -> list[str]:
        return [embedding_text(d.record.title, c.chunk.text) for d in self.documents for c in d.chunks]


@dataclass
class WriteResult:
    """What one write (or, summed, a run) stored."""
    documents_added: int = 0
    chunks_added: int = 0
    embeddings_added: int = 0
    status_changes: int = 0
    stored_chunks_embedded: int = 0   # of embeddings_added: chunks stored earlier, new to this embedder
    event_id: int | None = None

    def __add__(self, other: "WriteResult") -> "WriteResult":
        counts = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "event_id"}
        return WriteResult(**counts, event_id=other.event_id or self.event_id)


@dataclass
class CommitLog:
    """What a run has committed so far, batch by batch, so that a failure can say exactly what is
    stored and where a re-run picks up (batches are written in order, one transaction each)."""

    input_name: str
    batches: int = 0
    last_item: object = None      # the last JSONL line number or file name of the last committed batch
    totals: WriteResult = field(default_factory=WriteResult)

    def committed(self, raw: RawBatch, result: WriteResult) -> None:
        self.batches += 1
        self.last_item = raw.items[-1][0] if raw.items else self.last_item
        self.totals += result

    def failure_note(self, failed_batch: int, failed_raw: RawBatch | None) -> str:
        where = f"batch {failed_batch}"
        if failed_raw is not None and failed_raw.items:
            where += f" ({_span(failed_raw.items[0][0], failed_raw.items[-1][0])})"
        if not self.batches:
            return f"nothing of {self.input_name} was committed: {where} failed before any write."
        t = self.totals
        return (f"committed before this failure: batches 1–{self.batches} of {self.input_name} through "
                f"{_span(self.last_item)} (+{t.documents_added} documents, +{t.chunks_added} chunks, "
                f"+{t.embeddings_added} embeddings); {where} and everything after it wrote nothing. Re-running the "
                f"same command skips what is stored and resumes at batch {self.batches + 1}.")


def _span(first: object, last: object = None) -> str:
    unit = "line" if isinstance(first, int) else "file"
    if last is None or last == first:
        return f"{unit} {first:,}" if unit == "line" else f"{unit} {first}"
    return f"lines {first:,}–{last:,}" if unit == "line" else f"files {first} … {last}"


def plan_chunks(records: Sequence[Record], options: ChunkingOptions,
                stored_chunks: Sequence[StoredChunk] = ()) -> PreparedBatch:
    """Chunk the new records; `stored_chunks` (already stored, unknown to the embedder) ride along to be embedded."""
    documents = []
    for record in records:
        chunks = [
            PreparedChunk(chunk_key(record.source.name, record.external_id, record.content_hash, c), c)
            for c in chunk_text(record.text, options)
        ]
        documents.append(PreparedDocument(record, chunks))
    return PreparedBatch(documents, list(stored_chunks))


def embed_chunks(batch: PreparedBatch, embedder: Embedder,
                 on_embedded: Callable[[int], None] | None = None) -> PreparedBatch:
    """Embed the whole batch in one call: each embedder batches within its own limits (API request
    sizes, the ONNX model's length-sorted batches), and sorting by length pads least over the whole batch.
    With `on_embedded` (told how many texts each call embedded), in calls of EMBED_SLICE texts of similar length."""
    new_texts = batch.chunk_texts()
    texts = new_texts + [s.text for s in batch.stored_chunks]
    if not texts:
        matrix = np.zeros((0, embedder.dim), dtype=np.float32)
    elif on_embedded is None:
        matrix = _checked(embedder, embedder.embed_documents(texts), len(texts))
    else:
        matrix = np.empty((len(texts), embedder.dim), dtype=np.float32)
        by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(texts), EMBED_SLICE):
            rows = by_length[start:start + EMBED_SLICE]
            matrix[rows] = _checked(embedder, embedder.embed_documents([texts[i] for i in rows]), len(rows))
            on_embedded(len(rows))
    batch.embeddings, batch.stored_embeddings = matrix[:len(new_texts)], matrix[len(new_texts):]
    batch.embedder_name, batch.embedder_engine = embedder.name, embedder.engine
    batch.embedder_version, batch.dim = embedder.version, embedder.dim
    return batch


def _checked(embedder: Embedder, matrix: np.ndarray, count: int) -> np.ndarray:
    if matrix.shape != (count, embedder.dim):
        raise ValueError(f"{embedder.name} returned {matrix.shape}, expected {(count, embedder.dim)}")
    return matrix


def prepare(records: Sequence[Record], embedder: Embedder, options: ChunkingOptions = ChunkingOptions(),
            stored_chunks: Sequence[StoredChunk] = ()) -> PreparedBatch:
    """Chunk the new records, then embed them and `stored_chunks` (stored, unknown to the embedder): a
    batch's CPU work in one call (the flow's prepare-batch task, tests, benchmarks)."""
    return embed_chunks(plan_chunks(records, options, stored_chunks), embedder)


class BatchInFlight:
    """One input batch as it moves through load → validate → chunk → embed → write.

    Deliberately a plain class rather than a dataclass or list: Prefect walks dataclasses, lists
    and dicts passed between tasks looking for futures (~0.4 ms per row, 0.7 s for 2,000 rows),
    while an opaque object passes in ~10 ms.
    """

    __slots__ = ("number", "raw", "rows", "files", "records", "new_records", "stored_chunks", "prepared")

    def __init__(self, number: int, raw: object):
        self.number = number
        self.raw = raw
        self.rows: list[dict] = []
        self.files: list[FileOutcome] = []     # a batch of documents: every file's outcome
        self.records: list[Record] = []
        self.new_records: list[Record] = []
        self.stored_chunks: list[StoredChunk] = []
        self.prepared = PreparedBatch([])

    def release(self) -> None:
        """Drop the rows, records, chunks and vectors once the batch is committed. Prefect's completed
        states and futures hold a task's parameters and result in reference cycles, which only a full
        garbage collection frees, and such collections are rare in a large heap: without this, every
        batch written stayed in memory until the run ended (+14 MB per 28 PDFs)."""
        self.rows, self.records, self.new_records, self.stored_chunks = [], [], [], []
        self.prepared = PreparedBatch([])
