"""Ingestion throughput, end to end through the Prefect flow, with the database floor as reference.

    python -m bench.ingest                 # SciFact (5,183 abstracts) + synthetic 10k and 100k chunks
    python -m bench.ingest --sizes 10000   # quicker

Each corpus is ingested by `flows.ingest.ingest` (load → validate → chunk → embed → write → HNSW
build → BM25 posting compaction; hashed embedder) into a new embedded PostgreSQL, in a fresh subprocess so that its peak RSS
is its own. The reference, measured in the same run on the same chunks, is the database floor: a
bare binary COPY of the same chunk rows and vectors into the same schema followed by the same index
build — what any ingester pays before doing any work of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "beir" / "corpus.jsonl"
WORDS_PER_DOCUMENT = 120  # ~0.85 kB of text: about one 1,200-character chunk per synthetic document


def write_synthetic_jsonl(path: Path, documents: int, *, seed: int = 7) -> Path:
    """A synthetic corpus (bench.synthetic_corpus) as JSONL records, streamed to disk."""
    from bench.synthetic_corpus import SyntheticCorpus

    corpus = SyntheticCorpus(documents, seed=seed, mean_words=WORDS_PER_DOCUMENT)
    with Path(path).open("w", encoding="utf-8") as out:
        for batch in corpus.records():
            for r in batch:
                out.write(json.dumps({
                    "id": r.external_id, "title": r.title, "text": r.text, "sector": r.sector,
                    "published_at": r.published_at.isoformat(),
                    "source": {"name": r.source.name, "importance": r.source.importance,
                               "quality_score": r.source.quality_score, "licence": r.source.licence},
                }) + "\n")
    return Path(path)


def _child(corpus: str, data_dir: str) -> None:
    """Runs in a subprocess: ingest, then the reference on the same chunks; prints JSON."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.config import Settings
    from forum_atlas.flows.ingest import ingest

    os.environ["ATLAS_DATA_DIR"] = data_dir
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        summary = ingest(corpus, batch_size=2000)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    floor = _copy_floor(Settings(data_dir=Path(data_dir)))
    print(json.dumps({"summary": summary, "peak_rss_mb": peak_mb, "floor": floor}))


def _copy_floor(settings) -> dict:
    """COPY the stored chunks and vectors into empty twins of the tables, build the same index."""
    from forum_atlas.store.db import Database

    with Database.open(settings) as db, db.connection() as conn:  # rolled back: the floor leaves nothing
        chunks = conn.execute("SELECT chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable FROM forum.chunks").fetchall()
        vectors = conn.execute("SELECT chunk_id, model_id, embedding FROM forum.embeddings").fetchall()
        dim = conn.execute("SELECT dim FROM forum.embedding_models LIMIT 1").fetchone()["dim"]
        conn.execute(
            """CREATE TEMP TABLE chunks_floor (
                   chunk_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, chunk_key text UNIQUE, document_id bigint,
                   ordinal int, start_char int, end_char int, heading text, body text, searchable bool,
                   lexemes tsvector GENERATED ALWAYS AS (forum.analyze(heading, body)) STORED)""")
        conn.execute("CREATE TEMP TABLE embeddings_floor (LIKE forum.embeddings, PRIMARY KEY (chunk_id, model_id))")
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        start = time.perf_counter()
        with conn.cursor().copy("COPY chunks_floor (chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable) FROM STDIN") as copy:
            for row in chunks:
                copy.write_row(tuple(row.values()))
        with conn.cursor().copy("COPY embeddings_floor FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "vector"])
            for row in vectors:
                copy.write_row(tuple(row.values()))
        conn.execute(f"CREATE INDEX ON embeddings_floor USING hnsw ((embedding::vector({dim})) vector_cosine_ops)")
        seconds = time.perf_counter() - start
        conn.rollback()
    return {"chunks": len(chunks), "seconds": seconds}


def _run(corpus: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as data_dir:
        # A Prefect home of its own: the temporary API's SQLite file is not shared with other processes.
        env = {**os.environ, "PREFECT_HOME": str(Path(data_dir) / "prefect")}
        out = subprocess.run([sys.executable, "-m", "bench.ingest", "--child", str(corpus), data_dir],
                             cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"ingesting {corpus.name} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 90_000], help="synthetic corpus sizes, in documents (~1.1 chunks each)")
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    corpora = [] if args.no_scifact else [("SciFact (5,183 abstracts)", SCIFACT)]
    with tempfile.TemporaryDirectory(prefix="atlas-corpus-") as tmp:
        for size in args.sizes:
            corpora.append((f"synthetic {size:,} docs", write_synthetic_jsonl(Path(tmp) / f"syn{size}.jsonl", size)))
        header = (f"{'corpus':<26}{'chunks':>9}{'seconds':>9}{'chunks/s':>10}{'index s':>9}{'compact s':>11}"
                  f"{'floor s':>9}{'x floor':>9}{'peak RSS MB':>13}")
        print(header)
        print("-" * len(header))
        for name, path in corpora:
            result = _run(path)
            s, floor = result["summary"], result["floor"]
            print(f"{name:<26}{s['chunks_added']:>9,}{s['seconds']:>9.1f}{s['chunks_per_second']:>10,.0f}"
                  f"{s['index_seconds']:>9.1f}{s['bm25_compaction_seconds']:>11.1f}{floor['seconds']:>9.1f}"
                  f"{s['seconds'] / floor['seconds']:>9.2f}"
                  f"{result['peak_rss_mb']:>13.0f}")


if __name__ == "__main__":
    main()
