"""Deliberation on the full SciFact corpus (5,183 abstracts), offline engine and rule verifier.

    python -m bench.deliberation            # everything below; ~5 min on 2 cores
    python -m bench.deliberation --json     # the figures as JSON as well

1. Citations: 50 dev-split claims asked as questions. An independent re-check in plain Python
   (not the SQL function, not the project's quote helpers) looks for every published [SOURCED]
   quote in its cited chunk as read straight from the table; totals must add up (published
   [SOURCED] + [INFERRED] = published claims; every [SOURCED] tag an engine wrote, in every attempt,
   is either verified or a logged downgrade). How often a verified citation is one of the claim's
   gold SciFact documents is reported as context, not as a target.
2. Support verifier on SciFact dev claim–abstract pairs (bench.support_eval): precision and recall
   per label, abstention, and direction precision where it commits (the seed's contract: >= 98 %).
3. Latency over 20 questions in a warm process: the deliberation as plain calls (the work alone)
   and as the Prefect flow (temporary local API, heartbeats off); p50/p95 of each and of the
   per-question difference, Prefect's share — and, as the floor measured in the same run, a flow
   that does nothing but the same number of task runs and artifacts, run in the same alternation.
4. 20 deliberations at once against one database (threads): all persisted, no lost rows, no
   deadlock, the audit chain intact.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact"
QUESTIONS = 50
LATENCY_QUESTIONS = 20
CONCURRENT = 20


def percentiles(samples: list[float]) -> tuple[float, float]:
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


def dev_claims(limit: int) -> list[dict]:
    with (SHARED / "original" / "claims_dev.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle][:limit]


def prepare_database() -> tuple[object, float]:
    """A fresh database on the bench's embedded server with all of SciFact ingested."""
    from bench.corpus_loading import fresh_database, load, scifact_records
    from forum_atlas.config import Settings
    from forum_atlas.embeddings import HashedEmbedder
    from forum_atlas.ingestion.chunking import ChunkingOptions
    from forum_atlas.runtime import pgserver
    from forum_atlas.store.db import Database

    home = Path(os.environ.get("ATLAS_BENCH_DATA_DIR", "/tmp/atlas-bench-deliberation"))
    url = fresh_database(pgserver.embedded_url(home / "pgdata"), "atlas_bench_deliberation")
    settings = Settings(database_url=url, data_dir=home)
    start = time.perf_counter()
    with Database.open(settings) as db:
        report = load(db, scifact_records(SHARED / "beir"), HashedEmbedder(), ChunkingOptions())
    print(f"SciFact ingested: {report.chunks:,} chunks in {time.perf_counter() - start:.1f} s", flush=True)
    return settings, time.perf_counter() - start


def retrieved_round(settings, question: str, top_k: int = 10):
    """A question's round as a deliberation sees it: the coordinator's plan, each persona's retrieval
    (plain calls, the pipeline's stages) and the round's labelled passages — (plan, RoundEvidence,
    passages by role), what an engine's draft requests are built from."""
    from forum_atlas.deliberation.brief import round_passages
    from forum_atlas.deliberation.plan import plan_panel
    from forum_atlas.retrieval.model import RetrievalOptions
    from forum_atlas.tasks.retrieval import retrieve_plain

    panel = plan_panel(question, None)
    results = {p.role: retrieve_plain(settings, p.focus_query, RetrievalOptions(top_k=top_k)) for p in panel.personas}
    evidence, passages = round_passages(panel, results)
    return panel, evidence, passages


def _chunk_bodies(db, chunk_ids: set[int]) -> dict[int, str]:
    with db.connection() as conn:
        return {r["chunk_id"]: r["body"] for r in conn.execute(
            "SELECT chunk_id, body FROM forum.chunks WHERE chunk_id = ANY (%s)", (list(chunk_ids),))}


def _independent_match(quote: str, body: str) -> bool:
    return " ".join(quote.split()) in " ".join(body.split())


def citations(settings, claims: list[dict]) -> dict:
    from forum_atlas.flows.deliberate import deliberation
    from forum_atlas.store.briefs import load_snapshot
    from forum_atlas.store.db import shared_database
    from forum_atlas.tasks.deliberation import PLAIN_CALLS, DeliberationParameters

    db = shared_database(settings)
    totals = dict(briefs=0, published_claims=0, sourced=0, inferred=0, downgraded=0, retried=0, claimed_sourced=0,
                  attempts_verified=0, verbatim_recheck_failures=0, insufficient_sections=0, all_insufficient=0,
                  gold_citations=0, additive=0)
    with db.connection() as conn:
        doc_ids = {r["document_id"]: r["external_id"] for r in conn.execute("SELECT document_id, external_id FROM forum.documents")}
    for claim in claims:
        view = deliberation(DeliberationParameters(question=claim["claim"]), settings, PLAIN_CALLS)
        published = [c for s in (*view.sections, view.synthesis) if not s.insufficient for c in s.claims]
        sourced = [c for c in published if c.tag == "SOURCED"]
        bodies = _chunk_bodies(db, {c.citation.chunk_id for c in sourced})
        totals["verbatim_recheck_failures"] += sum(not _independent_match(c.citation.quote, bodies[c.citation.chunk_id])
                                                   for c in sourced)
        gold = {str(d) for d in claim.get("cited_doc_ids", [])} | set(claim.get("evidence", {}))
        totals["gold_citations"] += sum(doc_ids[c.citation.document_id] in gold for c in sourced)
        attempts = load_snapshot(db, view.brief_id)["evidence"]["attempts"]
        attempt_claims = [c for a in attempts for c in a["claims"]]
        claimed = sum(c["claimed_tag"] == "SOURCED" for c in attempt_claims)
        verified = sum(c["claimed_tag"] == "SOURCED" and c["tag"] == "SOURCED" for c in attempt_claims)
        audit = view.audit
        adds_up = (audit.sourced_verified == len(sourced) and audit.inferred == len(published) - len(sourced)
                   and audit.sourced_claimed == claimed == verified + audit.downgraded)
        totals["additive"] += adds_up
        totals["briefs"] += 1
        totals["published_claims"] += len(published)
        totals["sourced"] += len(sourced)
        totals["inferred"] += len(published) - len(sourced)
        totals["downgraded"] += audit.downgraded
        totals["retried"] += audit.retried
        totals["claimed_sourced"] += claimed
        totals["attempts_verified"] += verified
        totals["insufficient_sections"] += audit.insufficient_sections
        totals["all_insufficient"] += all(s.insufficient for s in view.sections)
    return totals


def _floor_flow():
    """A flow with the deliberate flow's Prefect footprint and no work: one persona's run has 12
    task runs (plan, 5 retrieval, round evidence, draft, audit, synthesis, audit, persist) and 2
    artifacts."""
    from prefect import flow, task
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    @task
    def nothing(i: int) -> int:
        return i

    @flow(name="prefect-floor")
    def floor(task_runs: int = 12) -> None:
        for i in range(task_runs):
            nothing(i)
        create_markdown_artifact(key="floor", markdown="# floor")
        create_table_artifact(key="floor-table", table=[{"measure": "m", "value": 0}])

    return floor


def latency(settings, claims: list[dict]) -> dict:
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.flows.deliberate import deliberate, deliberation
    from forum_atlas.tasks.deliberation import PLAIN_CALLS, DeliberationParameters

    os.environ["ATLAS_DATABASE_URL"] = settings.database_url
    os.environ["ATLAS_DATA_DIR"] = str(settings.data_dir)
    questions = [c["claim"] for c in claims]
    plain, with_prefect, floor_ms = [], [], []
    floor = _floor_flow()
    for question in questions[:3]:  # warm both paths: models, pools, the temporary API's start-up
        deliberation(DeliberationParameters(question=question), settings, PLAIN_CALLS)
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        deliberate(DeliberationParameters(question=questions[0]))
        floor()
        for question in questions:
            t0 = time.perf_counter()
            deliberation(DeliberationParameters(question=question), settings, PLAIN_CALLS)
            t1 = time.perf_counter()
            deliberate(DeliberationParameters(question=question))
            t2 = time.perf_counter()
            floor()
            t3 = time.perf_counter()
            plain.append((t1 - t0) * 1000)
            with_prefect.append((t2 - t1) * 1000)
            floor_ms.append((t3 - t2) * 1000)
    share = [f - p for f, p in zip(with_prefect, plain)]
    return {"plain_ms": percentiles(plain), "flow_ms": percentiles(with_prefect), "prefect_ms": percentiles(share),
            "prefect_share_of_p50": statistics.median(share) / statistics.median(with_prefect),
            "floor_ms": percentiles(floor_ms),
            "flow_over_floor_p50": statistics.median(with_prefect) / statistics.median(floor_ms)}


def concurrency(settings, claims: list[dict]) -> dict:
    from forum_atlas.flows.deliberate import deliberation
    from forum_atlas.store.db import shared_database, verify_events
    from forum_atlas.tasks.deliberation import PLAIN_CALLS, DeliberationParameters

    db = shared_database(settings)

    def counts() -> dict[str, int]:
        with db.connection() as conn:
            return {t: conn.execute(f"SELECT count(*) AS n FROM forum.{t}").fetchone()["n"]
                    for t in ("briefs", "brief_claims", "citations", "evidence_snapshots", "provider_calls")}

    before = counts()
    start = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENT) as pool:
        views = list(pool.map(lambda c: deliberation(DeliberationParameters(question=c["claim"]), settings,
                                                     PLAIN_CALLS),
                              claims[:CONCURRENT]))
    seconds = time.perf_counter() - start
    after = counts()
    with db.connection() as conn:
        problems, events = verify_events(conn)
    verified = sum(c.tag == "SOURCED" for v in views for s in (*v.sections, v.synthesis) for c in s.claims
                   if not s.insufficient)
    return {"deliberations": len(views), "distinct_briefs": len({v.brief_id for v in views}),
            "briefs_added": after["briefs"] - before["briefs"],
            "snapshots_added": after["evidence_snapshots"] - before["evidence_snapshots"],
            "citations_added": after["citations"] - before["citations"], "verified_claims": verified,
            "seconds": seconds, "audit_chain_problems": len(problems), "events": events}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # A Prefect home of its own: the temporary API's SQLite database is not shared with any other
    # process on the machine (a shared one answers "database is locked" and the client backs off).
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="atlas-bench-prefect-")
    from bench.support_eval import evaluate
    from forum_atlas.entailment import RuleBasedSupportVerifier

    settings, load_seconds = prepare_database()
    claims = dev_claims(QUESTIONS)
    results = {"load_seconds": load_seconds}
    t = time.perf_counter()
    results["citations"] = citations(settings, claims)
    results["citations"]["seconds"] = time.perf_counter() - t
    results["support"] = evaluate(RuleBasedSupportVerifier())
    results["latency"] = latency(settings, claims[:LATENCY_QUESTIONS])
    results["concurrency"] = concurrency(settings, claims[QUESTIONS - CONCURRENT:])
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=2, default=str))
    c, k = results["citations"], results["concurrency"]
    # a failed check is a failed benchmark run, not a figure to publish
    ok = (c["verbatim_recheck_failures"] == 0 and c["additive"] == c["briefs"]
          and k["briefs_added"] == k["distinct_briefs"] == CONCURRENT and k["audit_chain_problems"] == 0)
    return 0 if ok else 1


def report(r: dict) -> str:
    c, s, lat, k = r["citations"], r["support"], r["latency"], r["concurrency"]
    lines = [
        f"## Citations: {c['briefs']} SciFact dev claims asked as questions ({c['seconds']:.1f} s)",
        "| measure | value |", "|---|---|",
        f"| published claims | {c['published_claims']} ([SOURCED] {c['sourced']}, [INFERRED] {c['inferred']}) |",
        f"| [SOURCED] quotes not found verbatim by the independent re-check | {c['verbatim_recheck_failures']} |",
        f"| briefs whose totals add up | {c['additive']} / {c['briefs']} |",
        f"| [SOURCED] tags written (all attempts) = verified + downgraded | {c['claimed_sourced']} = "
        f"{c['attempts_verified']} + {c['downgraded']} |",
        f"| retried sections / insufficient sections / all-insufficient briefs | {c['retried']} / "
        f"{c['insufficient_sections']} / {c['all_insufficient']} |",
        f"| verified citations of a gold SciFact document (context) | {c['gold_citations']} / {c['sourced']} |",
        "", "## Support verifier (rule-based) on SciFact dev claim–abstract pairs",
        "```", _support_table(s), "```",
        "", f"## Latency over {LATENCY_QUESTIONS} questions, warm process (ms)",
        "| path | p50 | p95 |", "|---|---|---|",
        f"| the work alone (plain calls) | {lat['plain_ms'][0]:.0f} | {lat['plain_ms'][1]:.0f} |",
        f"| the deliberate flow (Prefect) | {lat['flow_ms'][0]:.0f} | {lat['flow_ms'][1]:.0f} |",
        f"| Prefect's share (flow − plain, per question) | {lat['prefect_ms'][0]:.0f} | {lat['prefect_ms'][1]:.0f} |",
        f"| floor: a flow with the same 12 task runs and 2 artifacts doing nothing | {lat['floor_ms'][0]:.0f} | "
        f"{lat['floor_ms'][1]:.0f} |",
        f"Prefect's share of the flow's p50: {lat['prefect_share_of_p50']:.0%}; "
        f"the flow's p50 over the floor's: {lat['flow_over_floor_p50']:.2f}×",
        "", f"## {CONCURRENT} deliberations at once against one database",
        f"{k['deliberations']} finished in {k['seconds']:.1f} s; {k['distinct_briefs']} distinct briefs, "
        f"{k['briefs_added']} brief rows and {k['snapshots_added']} snapshots added, {k['citations_added']} citations "
        f"for {k['verified_claims']} verified claims; audit chain problems: {k['audit_chain_problems']} "
        f"({k['events']} events)",
    ]
    return "\n".join(lines)


def _support_table(result: dict) -> str:
    from bench.support_eval import render

    return render(result)


if __name__ == "__main__":
    sys.exit(main())
