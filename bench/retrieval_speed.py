"""Retrieval speed on synthetic corpora (10k and 100k chunks), against rank_bm25 in the same run.

    python -m bench.retrieval_speed                 # builds both corpora (~8 min), then measures
    python -m bench.retrieval_speed --reuse         # measures on corpora built by an earlier run
    python -m bench.retrieval_speed --sizes 10000   # one size

Corpora: `bench.synthetic_corpus` (Zipfian vocabulary with a SciFact-like document-frequency
profile), ingested through the real write path with the hashed embedder, HNSW built at the end.
Queries: 6 distinct content words of a document drawn from the same distribution.

Measured per query (p50/p95, ms): BM25 (`forum.bm25_search`, top 20, served by the native kernel
when store/native.py could install it, which the output names; its PL/pgSQL fallback is timed on
the same queries right after, i.e. on warm buffers), dense (HNSW top 20 with
the 0.45 threshold), end-to-end hybrid (`retrieval.pipeline.retrieve` on a `store.retrieval.Retriever`: BM25 + dense + RRF + chunk
fetch, no rerank), the same with a selective filter (1 % sector), and rank_bm25's
`get_scores` + top-k over the same token lists. HNSW recall@20 is measured against an exact scan.
The queries run in a separate process whose peak RSS is reported, to show that query memory does
not grow with the corpus. Database location: ATLAS_BENCH_DATA_DIR (default /tmp/atlas-bench-retrieval).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.report import table
from bench.synthetic_corpus import SyntheticCorpus

QUERY_COUNT = 200
WARMUP = 10


def percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


def server_url() -> str:
    from forum_atlas.runtime import pgserver

    return pgserver.embedded_url(Path(os.environ.get("ATLAS_BENCH_DATA_DIR", "/tmp/atlas-bench-retrieval")) / "pgdata")


def build(url: str, name: str, size: int) -> dict:
    from bench.corpus_loading import fresh_database, load
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.store.db import Database

    db_url = fresh_database(url, name)
    with Database.open(Settings(database_url=db_url)) as db:
        report = load(db, SyntheticCorpus(size).records(1000), make_embedder("hashed"), progress=True)
    return {"chunks": report.chunks, "seconds": report.seconds, "chunks_per_s": report.chunks_per_second,
            "bm25_trigger_s": report.bm25_trigger_seconds, "index_s": report.index_seconds,
            "compaction_s": report.compaction_seconds}


def existing_size(url: str, name: str) -> int:
    import psycopg
    from psycopg.conninfo import make_conninfo

    try:
        with psycopg.connect(make_conninfo(url, dbname=name)) as conn:
            return conn.execute("SELECT chunk_count FROM forum.bm25_stats").fetchone()[0]
    except psycopg.Error:
        return -1


def bring_schema_current(db_url: str):
    """Pending migrations, the native BM25 kernel and posting compaction, on a corpus built by an
    earlier run (a no-op on one this run built)."""
    from forum_atlas.config import Settings, settings_from_env
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import compact_bm25_postings

    with Database.open(Settings(database_url=db_url, bm25_kernel=settings_from_env().bm25_kernel)) as db:
        compaction = compact_bm25_postings(db)
        if compaction.blocks_merged:
            print(f"merged {compaction.blocks_merged:,} posting blocks into {compaction.blocks_written:,} "
                  f"({compaction.seconds:.1f} s)", flush=True)
        return db.bm25_kernel


def query_worker(db_url: str, size: int) -> dict:
    """Runs in its own process: our query paths only, so its peak RSS is theirs."""
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.rerank.none import NoReranker
    from forum_atlas.retrieval.model import RetrievalOptions
    from forum_atlas.retrieval.pipeline import retrieve
    from forum_atlas.store import retrieval
    from forum_atlas.store.db import Database
    from forum_atlas.store.retrieval import Retriever

    queries = SyntheticCorpus(size).queries(QUERY_COUNT + WARMUP)
    embedder = make_embedder("hashed")
    options = RetrievalOptions()
    filtered = options.with_changes(sectors=("climate",))
    out: dict[str, list[float]] = {"bm25": [], "bm25_plpgsql": [], "dense": [], "hybrid": [], "bm25_filtered": [],
                                   "dense_filtered": [], "hybrid_filtered": []}
    recall: list[float] = []
    tie_recall: list[float] = []
    filtered_full: list[bool] = []
    with Database.open(Settings(database_url=db_url), migrate=False) as db:
        retriever = Retriever(db, embedder, NoReranker())
        with db.connection() as conn:
            for i, text in enumerate(queries):
                for name, opts in (("", options), ("_filtered", filtered)):
                    t0 = time.perf_counter()
                    lexical = retrieval.bm25(conn, text, opts)
                    t1 = time.perf_counter()
                    retrieval.dense(conn, embedder, text, opts)
                    t2 = time.perf_counter()
                    if i >= WARMUP:
                        out["bm25" + name].append((t1 - t0) * 1000)
                        out["dense" + name].append((t2 - t1) * 1000)
                    if not name:
                        # The portable engine on the same query, measured alongside the kernel.
                        t3 = time.perf_counter()
                        conn.execute("SELECT * FROM forum.bm25_search_maxscore(%s, %s)", (text, opts.bm25_k)).fetchall()
                        if i >= WARMUP:
                            out["bm25_plpgsql"].append((time.perf_counter() - t3) * 1000)
                    if name == "_filtered" and i >= WARMUP:
                        # Full top-k = k results, or every matching chunk the filter admits if fewer.
                        matching = conn.execute(
                            """SELECT count(*) AS n FROM forum.chunks c JOIN forum.documents d USING (document_id)
                                WHERE c.searchable AND d.sector = 'climate' AND c.lexemes @@
                                      (SELECT string_agg(quote_literal(term), ' | ')::tsquery
                                         FROM forum.bm25_query_terms(%s))""", (text,)).fetchone()["n"]
                        filtered_full.append(len(lexical.candidates) == min(opts.bm25_k, matching))
                if i >= WARMUP and i < WARMUP + 50:
                    approx = retrieval._dense_rows(conn, retrieval.embedding_model(conn, embedder),
                                                   embedder.embed_query(text), options, exact=False, limit=20)
                    exact = retrieval._dense_rows(conn, retrieval.embedding_model(conn, embedder),
                                                  embedder.embed_query(text), options, exact=True, limit=20)
                    truth = {r["chunk_id"] for r in exact}
                    recall.append(len(truth & {r["chunk_id"] for r in approx}) / max(1, len(truth)))
                    # ann-benchmarks' definition: a result counts if it is as close as the k-th true
                    # neighbour, so equally similar chunks (frequent ties here) are not misses.
                    kth = min((r["similarity"] for r in exact), default=1.0)
                    tie_recall.append(sum(r["similarity"] >= kth - 1e-6 for r in approx) / max(1, len(exact)))
            conn.commit()
        for i, text in enumerate(queries):
            for name, opts in (("hybrid", options), ("hybrid_filtered", filtered)):
                t0 = time.perf_counter()
                retrieve(retriever, text, opts)
                if i >= WARMUP:
                    out[name].append((time.perf_counter() - t0) * 1000)
    return {"latency": {k: percentiles(v) for k, v in out.items()}, "hnsw_recall_at_20": float(np.mean(recall)),
            "hnsw_distance_recall_at_20": float(np.mean(tie_recall)),
            "filtered_full_top_k": float(np.mean(filtered_full)),
            "peak_rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that across execve, so a child
    would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rank_bm25_reference(db_url: str, size: int) -> dict:
    import psycopg
    from rank_bm25 import BM25Okapi

    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            """SELECT (SELECT array_agg(u.lexeme) FROM unnest(c.lexemes) u),
                      (SELECT array_agg(coalesce(array_length(u.positions, 1), 1)) FROM unnest(c.lexemes) u)
                 FROM forum.chunks c WHERE c.searchable ORDER BY c.chunk_id""").fetchall()
        corpus = [[t for t, n in zip(terms or [], tfs or []) for _ in range(n)] for terms, tfs in rows]
        queries = SyntheticCorpus(size).queries(QUERY_COUNT + WARMUP)
        tokens = [[t for t, n in conn.execute("SELECT term, qtf FROM forum.bm25_query_terms(%s)", (q,)).fetchall()
                   for _ in range(n)] for q in queries]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    oracle = BM25Okapi(corpus)
    build_s = time.perf_counter() - t0
    samples = []
    for i, query in enumerate(tokens[:WARMUP + 40]):  # ~0.2-0.3 s each at 100k: 40 timed queries suffice
        t0 = time.perf_counter()
        scores = oracle.get_scores(query)
        np.argpartition(-scores, 20)[:20]
        if i >= WARMUP:
            samples.append((time.perf_counter() - t0) * 1000)
    return {"latency": percentiles(samples), "build_s": build_s,
            "rss_growth_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss_before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reuse", action="store_true", help="reuse corpora of the right size from an earlier run")
    parser.add_argument("--query-worker", nargs=2, metavar=("DB_URL", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.query_worker:
        print(json.dumps(query_worker(args.query_worker[0], int(args.query_worker[1]))))
        return 0
    from psycopg.conninfo import make_conninfo

    url = server_url()
    print(f"machine load: {os.getloadavg()[0]:.2f} (1-min average, 2 cores)")
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        name = f"bench_retrieval_{size}"
        load = None
        if not (args.reuse and existing_size(url, name) == size):
            print(f"building {size:,}-chunk corpus …", flush=True)
            load = build(url, name, size)
        db_url = make_conninfo(url, dbname=name)
        engine = bring_schema_current(db_url)
        print(f"BM25 engine: {engine.engine}{f' ({engine.reason})' if engine.reason else ''}", flush=True)
        worker = subprocess.run([sys.executable, "-m", "bench.retrieval_speed", "--query-worker", db_url, str(size)],
                                check=True, capture_output=True, text=True)
        measured = json.loads(worker.stdout.strip().splitlines()[-1])
        reference = rank_bm25_reference(db_url, size)
        results[size] = (load, measured, reference)
        print_size(size, load, measured, reference)
    return 0


def print_size(size: int, load: dict | None, measured: dict, reference: dict) -> None:
    print(f"\n## {size:,} chunks")
    if load:
        print(f"ingest: {load['chunks']:,} chunks in {load['seconds']:.1f} s = {load['chunks_per_s']:,.0f} chunks/s "
              f"(BM25 index triggers {load['bm25_trigger_s']:.1f} s = {100 * load['bm25_trigger_s'] / load['seconds']:.0f} %); "
              f"HNSW build {load['index_s']:.1f} s; BM25 posting compaction {load['compaction_s']:.1f} s")
    lat = measured["latency"]
    ref50, ref95 = reference["latency"]
    rows = [(label, f"{lat[key][0]:.1f}", f"{lat[key][1]:.1f}")
            for key, label in (("bm25", "BM25 top-20"), ("bm25_plpgsql", "BM25, PL/pgSQL fallback"),
                               ("dense", "dense HNSW top-20"), ("hybrid", "hybrid end-to-end"),
                               ("bm25_filtered", "BM25, 1% sector filter"), ("dense_filtered", "dense, 1% sector filter"),
                               ("hybrid_filtered", "hybrid, 1% sector filter"))]
    rows.append(("rank_bm25 get_scores+top-k", f"{ref50:.1f}", f"{ref95:.1f}"))
    print(table(["stage", "p50 ms", "p95 ms"], rows))
    print(f"BM25 speed-up vs rank_bm25 (p50): {ref50 / lat['bm25'][0]:.1f}x")
    print(f"HNSW recall@20 vs exact (synthetic text, near-random vectors): by id {measured['hnsw_recall_at_20']:.3f}, "
          f"by distance (ann-benchmarks, ties count) {measured['hnsw_distance_recall_at_20']:.3f}; "
          f"filtered BM25 returned min(20, matching) rows for {100 * measured['filtered_full_top_k']:.0f} % of queries")
    print(f"query process peak RSS: {measured['peak_rss_mb']:.0f} MB; rank_bm25 index build {reference['build_s']:.1f} s, "
          f"+{reference['rss_growth_mb']:.0f} MB RSS")


if __name__ == "__main__":
    sys.exit(main())
