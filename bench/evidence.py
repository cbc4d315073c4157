"""EVB-4 evidence benchmark contract on SciFact: top-5 precision, recall, support-direction precision.

    python -m bench.evidence                 # dev claims (300; 188 with gold evidence), ~1 min
    python -m bench.evidence --pool 50       # the candidate pool a source returns per claim

Retrieval: a source's search is played by BM25 (rank_bm25's BM25Okapi, the reference) over the
5,183 SciFact abstracts; its top `--pool` records go through the evidence router's deterministic
ranker (`forum_atlas.evidence.ranker.rank`, after the licence guard: SciFact abstracts are ODC-By,
an open licence). Both orders are scored on the 300 dev claims' qrels: P@5 (relevant share of the
top 5), hit@5 (a relevant abstract in the top 5), recall@5 and recall@pool.
Support direction: for every dev claim with gold evidence, the rule-based support verifier (the
default DEL-8 verifier) judges the claim against the gold rationale sentences of the abstract;
precision = correct SUPPORT/CONTRADICT directions among the verdicts that take a direction;
coverage = the share of pairs that got a direction at all.
The seed's contract: P@5 >= 0.95, recall >= 0.95, support-direction precision >= 0.98.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import time
from pathlib import Path

from rank_bm25 import BM25Okapi

from bench.report import table
from forum_atlas.entailment.base import SupportQuery
from forum_atlas.entailment.rules import RuleBasedSupportVerifier
from forum_atlas.evidence.licence import apply_licence_guard
from forum_atlas.evidence.model import EvidenceItem
from forum_atlas.evidence.ranker import rank

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
_TOKEN = re.compile(r"[a-z0-9]+")
CONTRACT = {"P@5": 0.95, "recall": 0.95, "support-direction precision": 0.98}


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def load() -> tuple[dict[str, dict], list[dict], dict[str, set[str]]]:
    corpus = {str(d["doc_id"]): d for d in map(json.loads, (DATA / "original" / "corpus.jsonl").open())}
    claims = [json.loads(line) for line in (DATA / "original" / "claims_dev.jsonl").open()]
    qrels: dict[str, set[str]] = {}
    with (DATA / "beir" / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    return corpus, claims, qrels


def metrics(orders: dict[str, list[str]], qrels: dict[str, set[str]], pool: int) -> dict[str, float]:
    p5, hit5, r5, rpool = [], [], [], []
    for qid, relevant in qrels.items():
        order = orders[qid]
        top5 = set(order[:5])
        p5.append(len(top5 & relevant) / 5)
        hit5.append(1.0 if top5 & relevant else 0.0)
        r5.append(len(top5 & relevant) / len(relevant))
        rpool.append(len(set(order[:pool]) & relevant) / len(relevant))
    return {"P@5": statistics.fmean(p5), "hit@5": statistics.fmean(hit5), "recall@5": statistics.fmean(r5),
            f"recall@{pool}": statistics.fmean(rpool)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=int, default=20, help="records a source returns per claim (default 20)")
    args = parser.parse_args()
    corpus, claims, qrels = load()
    ids = list(corpus)
    started = time.perf_counter()
    bm25 = BM25Okapi([tokens(corpus[i]["title"] + " " + " ".join(corpus[i]["abstract"])) for i in ids])
    bm25_orders, ranker_orders, ranker_ms = {}, {}, []
    for claim in claims:
        qid = str(claim["id"])
        if qid not in qrels:
            continue
        scores = bm25.get_scores(tokens(claim["claim"]))
        top = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:args.pool]
        bm25_orders[qid] = [ids[i] for i in top]
        items = [EvidenceItem(source="scifact", external_id=ids[i], title=corpus[ids[i]]["title"],
                              text=" ".join(corpus[ids[i]]["abstract"]), licence="ODC-By-1.0 (open data licence)",
                              kind="abstract", source_rank=position) for position, i in enumerate(top)]
        t0 = time.perf_counter()
        apply_licence_guard(items)
        ranker_orders[qid] = [item.external_id for _, item in rank(claim["claim"], items)]
        ranker_ms.append((time.perf_counter() - t0) * 1000.0)
    retrieval_s = time.perf_counter() - started

    verifier = RuleBasedSupportVerifier()
    gold, queries = [], []
    for claim in claims:
        for doc_id, sets in claim.get("evidence", {}).items():
            sentences = corpus[str(doc_id)]["abstract"]
            for rationale in sets:
                quote = " ".join(sentences[s] for s in rationale["sentences"])
                queries.append(SupportQuery(claim["claim"], quote, " ".join(sentences)))
                gold.append("supports" if rationale["label"] == "SUPPORT" else "contradicts")
    verdicts = verifier.judge(queries).verdicts
    directed = [(v, g) for v, g in zip(verdicts, gold) if v in ("supports", "contradicts")]
    direction_precision = sum(v == g for v, g in directed) / len(directed) if directed else float("nan")

    bm25_m = metrics(bm25_orders, qrels, args.pool)
    ranker_m = metrics(ranker_orders, qrels, args.pool)
    print(f"SciFact dev: {len(qrels)} claims with qrels, pool {args.pool} per claim (BM25 plays the source); "
          f"{retrieval_s:.1f} s; ranker median {statistics.median(ranker_ms):.2f} ms per claim")
    rows = []
    for key in bm25_m:
        target = CONTRACT.get(key) or (CONTRACT["recall"] if key.startswith("recall@5") else None)
        rows.append((key, f"{bm25_m[key]:.3f}", f"{ranker_m[key]:.3f}", "" if target is None else f">= {target}"))
    print(table(["measure", "BM25 (reference)", "evidence ranker", "contract"], rows))
    print(f"support direction ({len(queries)} gold rationale pairs, rule-based verifier {verifier.version}): "
          f"precision {direction_precision:.3f} on {len(directed)} directed verdicts, coverage "
          f"{len(directed) / len(queries):.3f}; contract >= {CONTRACT['support-direction precision']}")


if __name__ == "__main__":
    main()
