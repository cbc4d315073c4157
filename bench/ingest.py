"""Ingestion throughput, end to end through the Prefect flow, with the database floor as reference.

    python -m bench.ingest                 # SciFact (5,183 abstracts) + synthetic 10k and 100k chunks, then ONNX
    python -m bench.ingest --sizes 10000   # quicker
    python -m bench.ingest --onnx-only --onnx-docs 1000   # the ONNX embedder on the first 1,000 abstracts

Each corpus is ingested by `flows.ingest.ingest` (load → validate → chunk → embed → write → HNSW
build → BM25 posting compaction; hashed embedder) into a new embedded PostgreSQL, in a fresh subprocess so that its peak RSS
is its own. The reference, measured in the same run on the same chunks, is the database floor: the
same chunk rows COPYed bare, analysed by the same parallel query as the writer's (sql/072) and stored
with the same keys, the same vectors COPYed, the same index built — what any ingester pays before doing
any work of its own.

The ONNX table ingests SciFact (or its first --onnx-docs abstracts) with the default `onnx-minilm`
embedder. Its reference, in the same process on the same chunk texts, is the raw model: one
`embed_documents` call over all of them (tokenise, run the model in length-sorted batches, pool),
with nothing else around it; the ratio is ingest chunks/s over raw chunks/s. The speed-up from
length-sorted batching is measured on the first --sort-sample chunks, embedded sorted and in input order.
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


def _child(corpus: str, data_dir: str, sort_sample: int, ready: bool = False, holding: str = "",
           index_mode: str = "auto") -> None:
    """Runs in a subprocess: ingest, then the reference on the same chunks; prints JSON. For a model
    embedder the raw pass runs before and after the ingest: this machine's speed drifts by 10–15 %
    from one minute to the next, so a reference taken on one side only is biased by that drift.
    `ready`: the database exists (migrated, server up) and great-expectations is imported before the
    flow starts, so the run's seconds are the input's own, not the one-off set-up of a new installation.
    `holding`: a corpus ingested first, untimed (the database already holds it); the floor then covers
    only the measured corpus's chunks. `index_mode`: the measured ingest's."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.config import Settings, settings_from_env
    from forum_atlas.flows.ingest import ingest

    os.environ["ATLAS_DATA_DIR"] = data_dir
    if ready:
        from forum_atlas.ingestion.validation import warm_up_in_background
        from forum_atlas.store.db import shared_database

        shared_database(settings_from_env())
        warm_up_in_background().join()
    hashed = settings_from_env().embedder == "hashed"
    texts = [] if hashed else _chunk_texts(Path(corpus))
    raw_before = None if hashed else _raw_pass(texts)
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        held = ingest(holding, batch_size=2000)["chunks_added"] if holding else 0
        summary = ingest(corpus, batch_size=2000, index_mode=index_mode)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if hashed:
        reference = {"floor": copy_floor(Settings(data_dir=Path(data_dir)), skip=held)}
    else:
        reference = {"model": {"before": raw_before, "after": _raw_pass(texts), **_sorting_speedup(texts[:sort_sample])}}
    print(json.dumps({"summary": summary, "peak_rss_mb": peak_mb, **reference}))


def _chunk_texts(corpus: Path) -> list[str]:
    """The chunk texts the flow embeds, in its order."""
    from forum_atlas.ingestion.chunking import ChunkingOptions
    from forum_atlas.ingestion.preparation import plan_chunks
    from forum_atlas.ingestion.records import detect_format, iter_raw, load_rows, to_records

    records = [r for raw in iter_raw(corpus, detect_format(corpus), batch_size=2000) for r in to_records(load_rows(raw))]
    return plan_chunks(records, ChunkingOptions()).chunk_texts()


def _raw_pass(texts: list[str]) -> dict:
    """The configured embedder alone on the texts, in one call (length-sorted batches); the flow's own
    instance (same session and threads; the first pass also loads it, as a worker's first run would)."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.embeddings import embedder_for

    embedder = embedder_for(settings_from_env())
    before = embedder.stats.snapshot()
    start = time.perf_counter()
    embedder.embed_documents(texts)
    seconds = time.perf_counter() - start
    after = embedder.stats.snapshot()
    return {"chunks": len(texts), "seconds": seconds, "model_seconds": after["model_seconds"] - before["model_seconds"],
            "tokens": after["tokens"] - before["tokens"], "padded_tokens": after["padded_tokens"] - before["padded_tokens"],
            "threads": embedder.threads}


def _sorting_speedup(sample: list[str]) -> dict:
    """The same sample embedded length-sorted and in input order, by fresh instances."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.embeddings import make_embedder

    timings = {}
    for sort_by_length in (True, False):
        variant = make_embedder(settings_from_env().embedder, sort_by_length=sort_by_length)
        start = time.perf_counter()
        variant.embed_documents(sample)
        timings[sort_by_length] = time.perf_counter() - start
    return {"sample": len(sample), "sample_sorted_seconds": timings[True], "sample_unsorted_seconds": timings[False]}


def copy_floor(settings, skip: int = 0) -> dict:
    """The chunks as the writer stores them, with nothing else: COPYed bare, analysed by one parallel query
    (sql/072), inserted into a table with the same keys; the vectors COPYed into an empty twin of theirs;
    the same index built. `skip`: the first chunks stored (what the database held before), left out."""
    from forum_atlas.store.db import Database

    with Database.open(settings) as db, db.connection() as conn:  # rolled back: the floor leaves nothing
        chunks = conn.execute("SELECT chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable "
                              "FROM forum.chunks ORDER BY chunk_id OFFSET %s", (skip,)).fetchall()
        vectors = conn.execute("SELECT chunk_id, model_id, embedding FROM forum.embeddings ORDER BY chunk_id OFFSET %s",
                               (skip,)).fetchall()
        dim = conn.execute("SELECT dim FROM forum.embedding_models LIMIT 1").fetchone()["dim"]
        # not temporary: parallel workers cannot read a temporary table
        conn.execute("CREATE UNLOGGED TABLE forum.stage_floor (LIKE forum.chunk_stage INCLUDING DEFAULTS)")
        conn.execute(
            """CREATE TEMP TABLE chunks_floor (
                   chunk_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, chunk_key text UNIQUE, document_id bigint,
                   ordinal int, start_char int, end_char int, heading text, body text, searchable bool,
                   lexemes tsvector)""")
        conn.execute("CREATE TEMP TABLE embeddings_floor (LIKE forum.embeddings, PRIMARY KEY (chunk_id, model_id))")
        conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        for setting in ("min_parallel_table_scan_size", "parallel_setup_cost", "parallel_tuple_cost"):
            conn.execute(f"SET LOCAL {setting} = 0")
        start = time.perf_counter()
        with conn.cursor().copy("COPY forum.stage_floor (seq, chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable) FROM STDIN") as copy:
            for seq, row in enumerate(chunks):
                copy.write_row((seq, *row.values()))
        conn.execute("CREATE TEMP TABLE lexemes_floor AS SELECT seq, forum.analyze(heading, body) AS lexemes "
                     "FROM forum.stage_floor")
        conn.execute("""INSERT INTO chunks_floor (chunk_key, document_id, ordinal, start_char, end_char, heading, body,
                                                  searchable, lexemes)
                        SELECT chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable, lexemes
                          FROM forum.stage_floor JOIN lexemes_floor USING (seq) ORDER BY seq""")
        with conn.cursor().copy("COPY embeddings_floor FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "vector"])
            for row in vectors:
                copy.write_row(tuple(row.values()))
        conn.execute(f"CREATE INDEX ON embeddings_floor USING hnsw ((embedding::vector({dim})) vector_cosine_ops)")
        seconds = time.perf_counter() - start
        conn.rollback()
    return {"chunks": len(chunks), "seconds": seconds}


def _run(corpus: Path, embedder: str = "hashed", sort_sample: int = 0, *, ready: bool = False,
         holding: Path | None = None, index_mode: str = "auto") -> dict:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-") as data_dir:
        # A Prefect home of its own: the temporary API's SQLite file is not shared with other processes.
        env = {**os.environ, "PREFECT_HOME": str(Path(data_dir) / "prefect"), "ATLAS_EMBEDDER": embedder}
        out = subprocess.run([sys.executable, "-m", "bench.ingest", "--child", str(corpus), data_dir, str(sort_sample),
                              str(int(ready)), str(holding or ""), index_mode], cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"ingesting {corpus.name} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 90_000], help="synthetic corpus sizes, in documents (~1.1 chunks each)")
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--onnx-docs", type=int, default=5183, help="SciFact abstracts for the ONNX table (0: skip it)")
    parser.add_argument("--onnx-only", action="store_true", help="only the ONNX table")
    parser.add_argument("--sort-sample", type=int, default=512, help="chunks for the length-sorting speed-up")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]), args.child[3] == "1", args.child[4], args.child[5])
        return
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    corpora = [] if args.no_scifact or args.onnx_only else [("SciFact (5,183 abstracts)", SCIFACT)]
    with tempfile.TemporaryDirectory(prefix="atlas-corpus-") as tmp:
        if not args.onnx_only:
            _hashed_table(corpora, [(size, Path(tmp) / f"syn{size}.jsonl") for size in args.sizes])
        if args.onnx_docs:
            _onnx_table(SCIFACT, args.onnx_docs, args.sort_sample, Path(tmp))


def _hashed_table(corpora: list[tuple[str, Path]], synthetic: list[tuple[int, Path]]) -> None:
    """The hashed embedder (model cost ~0) against the database floor."""
    for size, path in synthetic:
        corpora.append((f"synthetic {size:,} docs", write_synthetic_jsonl(path, size)))
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


def _onnx_table(scifact: Path, documents: int, sort_sample: int, tmp: Path) -> None:
    """The default ONNX embedder: ingest throughput against the raw model on the same chunks."""
    corpus = tmp / f"scifact-{documents}.jsonl"
    with scifact.open(encoding="utf-8") as source, corpus.open("w", encoding="utf-8") as out:
        out.writelines(line for _, line in zip(range(documents), source))
    result = _run(corpus, "onnx-minilm", sort_sample)
    s, model = result["summary"], result["model"]
    before, after = model["before"], model["after"]
    rate_before, rate_after = before["chunks"] / before["seconds"], after["chunks"] / after["seconds"]
    raw_rate = (rate_before + rate_after) / 2
    print(f"\nonnx-minilm on SciFact, first {documents:,} abstracts ({after['threads']} threads; "
          f"machine load {os.getloadavg()[0]:.2f})")
    header = (f"{'chunks':>8}{'ingest s':>10}{'ingest c/s':>12}{'model share':>13}{'raw c/s before':>16}"
              f"{'raw c/s after':>15}{'ratio':>7}{'padding':>9}{'sorted x':>10}{'peak RSS MB':>13}")
    print(header)
    print("-" * len(header))
    print(f"{s['chunks_added']:>8,}{s['seconds']:>10.1f}{s['chunks_per_second']:>12.2f}"
          f"{s.get('embed_model_share_of_run', float('nan')):>13.1%}{rate_before:>16.2f}{rate_after:>15.2f}"
          f"{s['chunks_per_second'] / raw_rate:>7.2f}{1 - after['tokens'] / after['padded_tokens']:>9.1%}"
          f"{model['sample_unsorted_seconds'] / model['sample_sorted_seconds']:>10.2f}{result['peak_rss_mb']:>13.0f}")
    print("ratio = ingest chunks/s / the mean of the raw model's chunks/s before and after the ingest (same chunks, "
          "same process); model share = time in InferenceSession.run / ingest seconds; padding = padded tokens "
          f"the raw run computed; sorted x = time in input order / time length-sorted on the first {model['sample']} chunks")
    print("flow summary: " + json.dumps({k: v for k, v in s.items() if k.startswith("embed")}))

if __name__ == "__main__":
    main()
