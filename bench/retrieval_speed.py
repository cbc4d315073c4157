"""Retrieval speed on synthetic corpora (10k, 100k, 1M chunks), against rank_bm25 in the same run.

    python -m bench.retrieval_speed                         # builds 10k and 100k, then measures
    python -m bench.retrieval_speed --reuse                 # measures corpora built by an earlier run
    python -m bench.retrieval_speed --sizes 1000000 --reuse # builds (or resumes) 1M, then measures
    python -m bench.retrieval_speed --sizes 1000000 --reuse --build-only   # build/resume only
    python -m bench.retrieval_speed --sizes 1000000 --stored  # measure what an unfinished build stored

How long it takes here (2 cores, 23 GB; 2026-12-02, nice -n 19 beside other work at load 1-7):
10k build ~20 s (ingest 13 s, HNSW 2 s, compaction 4 s); 100k ~5.5 min (ingest 4.2 min at ~400 chunks/s,
HNSW 40 s, compaction 41 s); 1M ~72 min: bulk 900k 31 min (480 chunks/s), HNSW 11 min (set
ATLAS_HNSW_BUILD_MEMORY_MB=6144: the default 1 GB cap builds the graph on disk, several times slower),
compaction 11 min, the incremental last 100k 13 min (128 chunks/s under load), its compaction 1 min and
floor 1 min. Measuring: 10k and 100k ~1.5 min together, 1M ~12 min (rank_bm25 ~4 min and +5 GB RSS).
Disk: ~22 GB at 1M. The server is sized in SERVER_SETTINGS (restarted once to apply them).

Corpora: `bench.synthetic_corpus` (Zipfian vocabulary with a SciFact-like document-frequency
profile), ingested through the real write path with the hashed embedder, HNSW built at the end.
From 1M on the last 100k are loaded on top of the rest with the index and compacted postings in
place (incremental, the realistic case), timed apart and set beside bench.ingest's database floor.
A build is resumable: with --reuse, a database holding a prefix of the corpus continues after it
(batches commit whole and in order; the stored prefix is checked, and the last stored batch is
offered again to show the write path adds nothing), and the figures of the killed parts come from
a state file beside the data (<name>.json). Stopping with SIGTERM rolls back the open batch.
Queries: 6 distinct content words of a document drawn from the same distribution.

Measured per query (p50/p95, ms): BM25 (`forum.bm25_search`, top 20, served by the native kernel
when store/native.py could install it, which the output names; its PL/pgSQL fallback is timed on
the same queries right after, i.e. on warm buffers, and must return the same top 20), dense (HNSW
top 20 with the 0.45 threshold, ef_search 40 and 100), end-to-end hybrid (`retrieval.pipeline.retrieve`
on a `retrieval.retriever.Retriever`: BM25 + dense + RRF + chunk fetch, no rerank), the same with a
selective filter (1 % sector; filtered BM25 must return min(20, matching chunks)), and rank_bm25's
`get_scores` + top-k over the same token lists where its estimated memory fits (else the output
says so). HNSW recall@20 is measured against an exact scan. What bounds BM25: the postings in the
query terms' lists and the buffer pages each engine touches (EXPLAIN (ANALYZE, BUFFERS)). Also the
HNSW build's time and maintenance_work_mem, sizes on disk, and, over several sizes, the cost curve
(log-log growth exponent of each p50). The queries run in a separate process whose peak RSS is
reported, to show that query memory does not grow with the corpus. Database location:
ATLAS_BENCH_DATA_DIR (default /tmp/atlas-bench-retrieval).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.report import load_line, table
from bench.synthetic_corpus import SyntheticCorpus
from forum_atlas.config import settings_from_env
from forum_atlas.store.documents import hnsw_build_memory_mb

QUERY_COUNT = 200
WARMUP = 10


def percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


def data_dir() -> Path:
    return Path(os.environ.get("ATLAS_BENCH_DATA_DIR", "/tmp/atlas-bench-retrieval"))


# The bench server is sized for a 1M-chunk corpus (~15 GB on disk) as its operator would size it:
# WAL room for bulk loads without a checkpoint every few batches, and a quarter of the memory as
# buffers (PostgreSQL's usual advice). The embedded defaults (128 MB buffers, 1 GB WAL) are an
# application's, not a 1M library's.
MEMORY_MB = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
SERVER_SETTINGS = {"shared_buffers": f"{max(128, MEMORY_MB // 4)}MB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"}


def server_url() -> str:
    import psycopg

    from forum_atlas.runtime import pgserver

    url = pgserver.embedded_url(data_dir() / "pgdata")
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in SERVER_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        restart = conn.execute("SELECT bool_or(pending_restart) FROM pg_settings").fetchone()[0]
    if restart:
        # Skipped (returns False) while another process uses the server: the settings then wait for its stop.
        pgserver.stop_embedded(data_dir() / "pgdata")
        url = pgserver.embedded_url(data_dir() / "pgdata")
    with psycopg.connect(url) as conn:
        now = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in SERVER_SETTINGS}
    print("bench server: " + ", ".join(f"{k} {v}" for k, v in now.items()), flush=True)
    return url


# From 1M chunks on, the last 100k are loaded on top of the rest with the HNSW index and compacted
# postings in place (the realistic case: a library growing), timed apart from the bulk first load.
INCREMENTAL_FROM = 1_000_000
INCREMENTAL_TAIL = 100_000
BATCH = 1000


def stored_documents(db) -> int:
    """How many of the corpus's documents are stored, checked to be exactly syn-0 … syn-(n-1) once
    each: batches commit whole and in order, so a killed load leaves a prefix and resumes after it."""
    with db.connection() as conn:
        row = conn.execute(
            """SELECT count(*) AS n, count(DISTINCT external_id) AS distinct_ids,
                      coalesce(max(substr(external_id, 5)::bigint), -1) AS last
                 FROM forum.documents""").fetchone()
    if not row["n"] == row["distinct_ids"] == row["last"] + 1:
        raise RuntimeError(f"stored corpus is not a clean prefix: {dict(row)}")
    return row["n"]


def _rss_mb(field: str = "VmRSS") -> float:
    """This process's RSS, or its peak (VmHWM). Not ru_maxrss: Linux carries that across execve, so a
    child would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _tracked(batches, phase: dict, save):
    """Yields `batches`, adding each written batch's count and time to `phase` and saving it, so
    the figures of a load killed part-way survive into the run that finishes it."""
    mark = time.perf_counter()
    for batch in batches:
        yield batch
        now = time.perf_counter()  # back here = `load` wrote the batch and asks for the next
        phase["documents"] += len(batch)
        phase["seconds"] += now - mark
        mark = now
        if phase["documents"] % 100_000 < len(batch):
            phase["rss_mb"].append([phase["start"] + phase["documents"], round(_rss_mb(), 1)])
        save()


def build(url: str, name: str, size: int, *, resume: bool) -> dict:
    """Create database `name` on the server at `url` (or, with `resume`, continue the one there) and
    load the corpus into it."""
    from psycopg.conninfo import make_conninfo

    from bench.corpus_loading import fresh_database

    state_path = data_dir() / f"{name}.json"
    if resume and existing_size(url, name) >= 0 and state_path.exists():
        return load_corpus(make_conninfo(url, dbname=name), size, state_path)
    state_path.unlink(missing_ok=True)
    return load_corpus(fresh_database(url, name), size, state_path)


def load_corpus(db_url: str, size: int, state_path: Path) -> dict:
    """Load the corpus through the real write path, after the documents already stored (a killed
    load resumes; the figures of its earlier parts come from `state_path`)."""
    from bench.corpus_loading import WHOLE_DOCUMENT, load
    from bench.ingest import copy_floor
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.ingestion.preparation import prepare
    from forum_atlas.ingestion.records import source_conflict
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import write_batch

    state = json.loads(state_path.read_text()) if state_path.exists() else {"size": size, "phases": {}}

    def save():
        state_path.write_text(json.dumps(state, indent=1))

    corpus = SyntheticCorpus(size)
    embedder = make_embedder("hashed")
    tail = INCREMENTAL_TAIL if size >= INCREMENTAL_FROM else 0
    with Database.open(settings_from_env().with_overrides(database_url=db_url)) as db:
        stored = stored_documents(db)
        if stored and stored < size:
            # The write path's own skip, at this size: the last stored batch offered again adds nothing.
            again = next(corpus.records(BATCH, start=max(0, stored - BATCH), stop=stored))
            t0 = time.perf_counter()
            written = write_batch(db, again, prepare(again, embedder, WHOLE_DOCUMENT), source_conflict)
            state["rewrite_check"] = {"at": stored, "documents_added": written.documents_added,
                                      "seconds": time.perf_counter() - t0}
            if written.documents_added:
                raise RuntimeError(f"a stored batch was written again: {written}")
            print(f"resuming at {stored:,} documents (stored batch re-offered: 0 added, "
                  f"{state['rewrite_check']['seconds']:.2f} s)", flush=True)
        for phase_name, lo, hi in (("bulk", 0, size - tail), ("incremental", size - tail, size)):
            if hi <= lo:
                continue
            phase = state["phases"].setdefault(phase_name, {"start": lo, "documents": 0, "seconds": 0.0, "rss_mb": [],
                                                            "segments": []})
            if stored >= hi and phase.get("done"):
                continue
            # Index build and compaction run at the end of each phase (in `load`), so the incremental
            # phase writes into an indexed, compacted corpus.
            report = load(db, _tracked(corpus.records(BATCH, start=max(stored, lo), stop=hi), phase, save),
                          embedder, progress=True)
            phase["segments"].append({"chunks": report.chunks, "seconds": report.seconds,
                                      "bm25_trigger_s": report.bm25_trigger_seconds})
            phase.update(index_s=report.index_seconds, compaction_s=report.compaction_seconds, done=True,
                         peak_rss_mb=round(_rss_mb("VmHWM"), 1))
            if phase_name == "incremental":
                # bench.ingest's database floor for the same chunks: bare COPY, analysis, vectors, their index.
                phase["floor_s"] = copy_floor(Settings(database_url=db_url), skip=lo)["seconds"]
            stored = max(stored, hi)
            save()
        state["complete"] = True
        save()
    return state


def index_stored(db_url: str) -> float:
    """The HNSW index over an unfinished corpus (`--stored`), as a finished load builds it; seconds."""
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import ensure_embedding_index, register_embedder

    embedder = make_embedder("hashed")
    with Database.open(settings_from_env().with_overrides(database_url=db_url)) as db:
        start = time.perf_counter()
        ensure_embedding_index(db, register_embedder(db, embedder.name, embedder.engine, embedder.version,
                                                     embedder.dim)["model_id"])
        return time.perf_counter() - start


def drop_stored_index(db_url: str) -> None:
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.store.db import Database
    from forum_atlas.store.documents import drop_embedding_index, register_embedder

    embedder = make_embedder("hashed")
    with Database.open(Settings(database_url=db_url)) as db:
        drop_embedding_index(db, register_embedder(db, embedder.name, embedder.engine, embedder.version,
                                                   embedder.dim)["model_id"])


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
    from forum_atlas.config import Settings
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
    from forum_atlas.retrieval import stages
    from forum_atlas.retrieval.pipeline import retrieve
    from forum_atlas.retrieval.retriever import Retriever
    from forum_atlas.store import retrieval
    from forum_atlas.store.db import Database

    queries = SyntheticCorpus(size).queries(QUERY_COUNT + WARMUP)
    embedder = make_embedder("hashed")
    options = RetrievalOptions()
    filtered = options.with_changes(sectors=("climate",))
    ef40 = options.with_changes(ef_search=40)
    out: dict[str, list[float]] = {"bm25": [], "bm25_plpgsql": [], "dense": [], "dense_ef40": [], "hybrid": [],
                                   "bm25_filtered": [], "dense_filtered": [], "hybrid_filtered": []}
    same_top: list[bool] = []
    recall: list[float] = []
    tie_recall: list[float] = []
    filtered_full: list[bool] = []
    with Database.open(Settings(database_url=db_url), migrate=False) as db:
        retriever = Retriever(retrieval.StoredCorpus(db), embedder, NoReranker())
        with db.connection() as conn:
            for i, text in enumerate(queries):
                for name, opts in (("", options), ("_filtered", filtered)):
                    t0 = time.perf_counter()
                    lexical = retrieval.bm25(conn, text, opts)
                    t1 = time.perf_counter()
                    stages.dense(embedder, text, opts, retrieval.StoredVectors(conn))
                    t2 = time.perf_counter()
                    if i >= WARMUP:
                        out["bm25" + name].append((t1 - t0) * 1000)
                        out["dense" + name].append((t2 - t1) * 1000)
                    if not name:
                        # The portable engine on the same query, measured alongside the kernel.
                        t3 = time.perf_counter()
                        portable = conn.execute("SELECT chunk_id FROM forum.bm25_search_maxscore(%s, %s)",
                                                (text, opts.bm25_k)).fetchall()
                        t4 = time.perf_counter()
                        stages.dense(embedder, text, ef40, retrieval.StoredVectors(conn))
                        if i >= WARMUP:
                            out["bm25_plpgsql"].append((t4 - t3) * 1000)
                            out["dense_ef40"].append((time.perf_counter() - t4) * 1000)
                            # Exact: the kernel's top-k is the portable engine's, rank for rank.
                            same_top.append([c.chunk_id for c in lexical.candidates] == [r["chunk_id"] for r in portable])
                    if name == "_filtered" and i >= WARMUP:
                        # Full top-k = k results, or every matching chunk the filter admits if fewer.
                        matching = conn.execute(
                            """SELECT count(*) AS n FROM forum.chunks c JOIN forum.documents d USING (document_id)
                                WHERE c.searchable AND d.sector = 'climate' AND c.lexemes @@
                                      (SELECT string_agg(quote_literal(term), ' | ')::tsquery
                                         FROM forum.bm25_query_terms(%s))""", (text,)).fetchone()["n"]
                        filtered_full.append(len(lexical.candidates) == min(opts.bm25_k, matching))
                if i >= WARMUP and i < WARMUP + 50:
                    approx = retrieval._dense_rows(conn, retrieval.embedding_model(conn, embedder.name),
                                                   embedder.embed_query(text), options, exact=False, limit=20)
                    exact = retrieval._dense_rows(conn, retrieval.embedding_model(conn, embedder.name),
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
        pages = bounds(db, queries[WARMUP:WARMUP + BOUND_QUERIES])
    return {"latency": {k: percentiles(v) for k, v in out.items()}, "hnsw_recall_at_20": float(np.mean(recall)),
            "hnsw_distance_recall_at_20": float(np.mean(tie_recall)),
            "filtered_full_top_k": float(np.mean(filtered_full)), "kernel_same_top_k": float(np.mean(same_top)),
            "peak_rss_mb": _rss_mb("VmHWM"), "bounds": pages}


BOUND_QUERIES = 30


def _buffers(plan: dict) -> int:
    return plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)


def bounds(db, queries: list[str]) -> dict:
    """What bounds each BM25 engine: buffer pages per query (EXPLAIN (ANALYZE, BUFFERS) counts the
    function's own reads, as buffer use is per backend) and the postings of the query's terms (the
    most an exhaustive engine reads; pruning reads fewer)."""
    pages: dict[str, list[int]] = {"kernel": [], "plpgsql": []}
    postings: list[int] = []
    with db.connection() as conn:
        for text in queries:
            for engine, function in (("kernel", "bm25_search"), ("plpgsql", "bm25_search_maxscore")):
                plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM forum.{function}(%s, 20)",
                                    (text,), prepare=False).fetchone()
                pages[engine].append(_buffers(next(iter(plan.values()))[0]["Plan"]))
            postings.append(conn.execute(
                """SELECT coalesce(sum(t.df), 0) AS n FROM forum.bm25_query_terms(%s) q
                     JOIN forum.bm25_terms t ON t.term = q.term""", (text,)).fetchone()["n"])
        conn.commit()
    return {"pages_kernel": float(np.median(pages["kernel"])), "pages_plpgsql": float(np.median(pages["plpgsql"])),
            "postings": float(np.median(postings))}


def disk_sizes(db_url: str) -> dict:
    import psycopg

    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            """SELECT c.relname, CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'forum' AND c.relkind IN ('r', 'i')
                  AND (c.relname IN ('documents', 'chunks', 'embeddings', 'bm25_postings', 'bm25_forward', 'bm25_terms')
                       OR c.relname LIKE 'embeddings_hnsw%')
                ORDER BY 2 DESC""").fetchall()
        database = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return {"relations": {name: size / 2**20 for name, size in rows}, "database_mb": database / 2**20}


# rank_bm25 holds a dict per document: measured on a sample, extrapolated, and run only if it fits
# in this share of the memory available.
RANK_BM25_SAMPLE = 20_000
RANK_BM25_MEMORY_SHARE = 0.5


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rank_bm25_reference(db_url: str, size: int, stored: int) -> dict:
    """rank_bm25 over the `stored` chunks (of a `size`-chunk corpus: its queries)."""
    import psycopg
    from rank_bm25 import BM25Okapi

    with psycopg.connect(db_url) as conn:
        queries = SyntheticCorpus(size).queries(QUERY_COUNT + WARMUP)
        tokens = [[t for t, n in conn.execute("SELECT term, qtf FROM forum.bm25_query_terms(%s)", (q,)).fetchall()
                   for _ in range(n)] for q in queries]
        rss_before = _rss_mb()
        corpus: list[list[str]] = []
        estimate_mb = None
        with conn.cursor(name="chunks") as cursor:  # streamed: 1M rows of token arrays do not fit twice
            cursor.itersize = 5000
            cursor.execute(
                """SELECT (SELECT array_agg(u.lexeme) FROM unnest(c.lexemes) u),
                          (SELECT array_agg(coalesce(array_length(u.positions, 1), 1)) FROM unnest(c.lexemes) u)
                     FROM forum.chunks c WHERE c.searchable ORDER BY c.chunk_id""")
            for terms, tfs in cursor:
                # Interned: one string per vocabulary word, not one per token occurrence.
                corpus.append([sys.intern(t) for t, n in zip(terms or [], tfs or []) for _ in range(n)])
                if len(corpus) == RANK_BM25_SAMPLE and stored > RANK_BM25_SAMPLE:
                    BM25Okapi(corpus)  # its dicts, measured while the sample is alive
                    estimate_mb = (_rss_mb("VmHWM") - rss_before) * stored / RANK_BM25_SAMPLE
                    if estimate_mb > RANK_BM25_MEMORY_SHARE * _available_mb():
                        return {"skipped": f"needs ~{estimate_mb:,.0f} MB (token lists + index, extrapolated from "
                                           f"{RANK_BM25_SAMPLE:,} documents); {_available_mb():,.0f} MB available"}
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
    return {"latency": percentiles(samples), "build_s": build_s, "estimate_mb": estimate_mb,
            "rss_growth_mb": _rss_mb("VmHWM") - rss_before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reuse", action="store_true", help="reuse corpora of the right size from an earlier run")
    parser.add_argument("--query-worker", nargs=2, metavar=("DB_URL", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--build-only", action="store_true", help="build (or resume) the corpora, measure nothing")
    parser.add_argument("--stored", action="store_true",
                        help="measure what an unfinished build stored (indexed and compacted for it), build nothing")
    args = parser.parse_args(argv)
    # A stopped build (SIGTERM) rolls its open batch back and releases the embedded server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.query_worker:
        print(json.dumps(query_worker(args.query_worker[0], int(args.query_worker[1]))))
        return 0
    from psycopg.conninfo import make_conninfo

    url = server_url()
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        name = f"bench_retrieval_{size}"
        state_path = data_dir() / f"{name}.json"
        complete = (json.loads(state_path.read_text()).get("complete") if state_path.exists()
                    else existing_size(url, name) == size)  # a corpus built before the state file
        db_url = make_conninfo(url, dbname=name)
        stored, partial_index_s = size, None
        if args.stored and not complete and existing_size(url, name) > 0:
            stored = existing_size(url, name)
            print(f"measuring the {stored:,} chunks stored of the unfinished {size:,}-chunk corpus", flush=True)
            partial_index_s = index_stored(db_url)
        elif not (args.reuse and complete):
            print(f"building {size:,}-chunk corpus … ({load_line()})", flush=True)
            build(url, name, size, resume=args.reuse)
        if args.build_only:
            continue
        engine = bring_schema_current(db_url)
        print(f"BM25 engine: {engine.engine}{f' ({engine.reason})' if engine.reason else ''}", flush=True)
        load_before = load_line()
        worker = subprocess.run([sys.executable, "-m", "bench.retrieval_speed", "--query-worker", db_url, str(size)],
                                check=True, stdout=subprocess.PIPE, text=True)
        measured = json.loads(worker.stdout.strip().splitlines()[-1])
        measured["load"] = f"{load_before}; after: {load_line()}"
        reference = rank_bm25_reference(db_url, size, stored)
        state = json.loads(state_path.read_text()) if state_path.exists() else None
        results[stored] = measured
        print_size(stored, state, measured, reference, disk_sizes(db_url))
        if partial_index_s is not None:
            granted = hnsw_build_memory_mb(stored, 384, settings_from_env().hnsw_build_memory_cap_mb)
            print(f"HNSW build over the {stored:,} stored chunks: {partial_index_s:.1f} s, maintenance_work_mem "
                  f"{granted} MB (dropped again: the bulk load resumes without it)")
            drop_stored_index(db_url)
    if len(results) > 1:
        print_curve(results)
    return 0


STAGES = (("bm25", "BM25 top-20 (forum.bm25_search)"), ("bm25_plpgsql", "BM25, PL/pgSQL fallback"),
          ("dense_ef40", "dense HNSW top-20, ef_search 40"), ("dense", "dense HNSW top-20, ef_search 100"),
          ("hybrid", "hybrid end-to-end"), ("bm25_filtered", "BM25, 1% sector filter"),
          ("dense_filtered", "dense, 1% sector filter"), ("hybrid_filtered", "hybrid, 1% sector filter"))


def print_ingest(size: int, state: dict) -> None:
    rows = []
    for name, phase in state["phases"].items():
        segments = phase["segments"]
        trigger = sum(seg["bm25_trigger_s"] for seg in segments)
        timed = sum(seg["seconds"] for seg in segments)
        total = phase["seconds"] + phase.get("index_s", 0) + phase.get("compaction_s", 0)
        rows.append((f"{name} ({phase['start']:,} → {phase['start'] + phase['documents']:,})", f"{phase['documents']:,}",
                     f"{phase['seconds']:.0f}", f"{phase['documents'] / phase['seconds']:,.0f}",
                     f"{total / phase['floor_s']:.2f}" if "floor_s" in phase else "",
                     f"{100 * trigger / timed:.0f}" if timed else "", *(f"{phase[key]:.{digits}f}" if key in phase else "unfinished"
                       for key, digits in (("index_s", 1), ("compaction_s", 1), ("peak_rss_mb", 0))),
                     " ".join(f"{n // 1000}k:{mb:.0f}" for n, mb in phase["rss_mb"])))
    print(table(["ingest phase", "chunks", "s", "chunks/s", "× floor (with index, compaction)", "BM25 trigger %", "HNSW build s", "compaction s",
                 "peak RSS MB", "RSS MB by chunks stored"], rows))
    bulk = state["phases"]["bulk"]
    granted = hnsw_build_memory_mb(bulk["start"] + bulk["documents"], 384, settings_from_env().hnsw_build_memory_cap_mb)
    print(f"HNSW build: maintenance_work_mem {granted} MB "
          f"(ensure_embedding_index's grant for {bulk['start'] + bulk['documents']:,} × 384-d)"
          + (f"; a resumed build re-offered the stored batch at {state['rewrite_check']['at']:,}: "
             f"{state['rewrite_check']['documents_added']} added, {state['rewrite_check']['seconds']:.2f} s"
             if "rewrite_check" in state else ""))


def print_size(size: int, state: dict | None, measured: dict, reference: dict, sizes: dict) -> None:
    print(f"\n## {size:,} chunks ({measured['load']})")
    if state:
        print_ingest(size, state)
    lat = measured["latency"]
    rows = [(label, f"{lat[key][0]:.1f}", f"{lat[key][1]:.1f}") for key, label in STAGES]
    if "latency" in reference:
        ref50, ref95 = reference["latency"]
        rows.append(("rank_bm25 get_scores+top-k", f"{ref50:.1f}", f"{ref95:.1f}"))
    print(table(["stage", "p50 ms", "p95 ms"], rows))
    if "latency" in reference:
        print(f"BM25 speed-up vs rank_bm25 (p50): {ref50 / lat['bm25'][0]:.1f}x; rank_bm25 index build "
              f"{reference['build_s']:.1f} s, +{reference['rss_growth_mb']:.0f} MB RSS with its token lists")
    else:
        print(f"rank_bm25 not run: {reference['skipped']}")
    print(f"kernel top-20 identical to the PL/pgSQL fallback's for {100 * measured['kernel_same_top_k']:.0f} % of queries; "
          f"filtered BM25 returned min(20, matching) rows for {100 * measured['filtered_full_top_k']:.0f} %")
    print(f"HNSW recall@20 vs exact (synthetic text, near-random vectors): by id {measured['hnsw_recall_at_20']:.3f}, "
          f"by distance (ann-benchmarks, ties count) {measured['hnsw_distance_recall_at_20']:.3f}")
    b = measured["bounds"]
    print(f"per BM25 query (median of {BOUND_QUERIES}): {b['postings']:,.0f} postings in the query terms' lists; "
          f"buffer pages touched: kernel {b['pages_kernel']:,.0f}, PL/pgSQL {b['pages_plpgsql']:,.0f}")
    print(f"query process peak RSS: {measured['peak_rss_mb']:.0f} MB")
    print(table(["on disk", "MB"], [(name, f"{mb:,.0f}") for name, mb in sizes["relations"].items()]
                + [("database total", f"{sizes['database_mb']:,.0f}")]))


def print_curve(results: dict[int, dict]) -> None:
    """p50 per stage per size, and its growth exponent: the log-log slope between consecutive sizes
    and over all (least squares). 1 = linear in the corpus."""
    sizes = sorted(results)
    logs = np.log(sizes)
    rows = []
    for key, label in STAGES:
        p50 = [results[n]["latency"][key][0] for n in sizes]
        steps = [np.log(p50[i + 1] / p50[i]) / np.log(sizes[i + 1] / sizes[i]) for i in range(len(sizes) - 1)]
        rows.append((label, *(f"{v:.1f}" for v in p50), *(f"{e:.2f}" for e in steps),
                     f"{np.polyfit(logs, np.log(p50), 1)[0]:.2f}"))
    postings = [results[n]["bounds"]["postings"] for n in sizes]
    rows.append(("postings per query (median)", *(f"{v:,.0f}" for v in postings),
                 *(f"{np.log(postings[i + 1] / postings[i]) / np.log(sizes[i + 1] / sizes[i]):.2f}"
                   for i in range(len(sizes) - 1)), f"{np.polyfit(logs, np.log(postings), 1)[0]:.2f}"))
    steps = [f"exp {sizes[i] // 1000}k→{sizes[i + 1] // 1000}k" for i in range(len(sizes) - 1)]
    print("\n## cost curve (p50 ms; growth exponent = log-log slope)")
    print(table(["stage", *(f"{n // 1000}k" for n in sizes), *steps, "exp (fit)"], rows))


if __name__ == "__main__":
    sys.exit(main())
