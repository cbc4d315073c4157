"""The evidence router with a slow and a failing source: does a run take about the slow source's
timeout, not the sum of all? (issue 14)

    python -m bench.evidence_router [--runs 3]

1. The router alone (plain threads): five connectors on local replay servers (the set-up of
   tests/atlas/evidence/test_router.py), Europe PMC answering after 5 s with a 1.5 s timeout,
   OpenAlex answering 500.
2. The `gather-evidence` flow, one Prefect task run per source: PubMed and PMC answer, ClinicalTrials.gov
   refuses (403), openFDA answers after 5 s with a 1.5 s timeout; cache off, nothing ingested; one
   warm-up run first (Prefect's temporary server, task registration).

Reference, printed beside each median: the slow source's timeout (the floor) and what the sources
would take one after another.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.report import table

SLOW_ANSWER_S, SLOW_TIMEOUT_S = 5.0, 1.5


def router_runs(runs: int) -> tuple[list[float], list[str]]:
    from forum_atlas.evidence.router import gather
    from tests.atlas.evidence.test_router import five, serve_all_five
    from tests.support.wire import WireServer

    seconds, labels = [], []
    for _ in range(runs):
        with WireServer() as wire:
            serve_all_five(wire, slow="europepmc", failing="openalex")
            connectors = five(wire, [], slow_timeout_s=SLOW_TIMEOUT_S)
            started = time.perf_counter()
            result = gather("metformin cancer", connectors, crossref=None, retraction_watch=None)
            seconds.append(time.perf_counter() - started)
            labels = [o.label for o in result.outcomes]
    return seconds, labels


def flow_runs(runs: int) -> tuple[list[float], list[float], list[str]]:
    import psycopg
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.runtime import pgserver
    from forum_atlas.store import migrations
    from tests.atlas.evidence.replay import crossref_message, recorded
    from tests.support.wire import WireServer

    home = Path(tempfile.mkdtemp(prefix="atlas-bench-router-"))
    url = pgserver.embedded_url(home / "pgdata", cleanup="delete")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrations.apply_pending(conn)
    os.environ["ATLAS_DATABASE_URL"], os.environ["ATLAS_EMBEDDER"] = url, "hashed"
    from forum_atlas.flows.gather_evidence import GatherParameters, gather_evidence

    inner, wall, labels = [], [], []
    try:
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), WireServer() as wire:
            wire.always("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
            wire.always("/efetch.fcgi", recorded("pubmed/efetch_pubmed_20412080.xml"))
            wire.always("/oa.fcgi", recorded("pmc/oa-fcgi_id-PMC7906746_tgz-link.xml"))
            wire.always("/works/10.1111/j.1399-0004.2010.01436.x", crossref_message(
                "crossref/derived_pruned/cachewrapped_works_10.1038_s41586-020-2649-2.json"))
            wire.always("/drug/label.json", recorded("openfda/label_search_brand-generic-aspirin_2015.json",
                                                     delay_s=SLOW_ANSWER_S))
            wire.always("/studies/NCT00973089", recorded("openfda/error_403_drugsfda_api-key-invalid.json"))
            names = ("pubmed", "clinicaltrials", "openfda", "pmc", "pmc-oa", "crossref")
            params = GatherParameters(
                question="what is known about the human phenotype ontology?",
                sources=["pubmed", "clinicaltrials", "openfda", "pmc"],
                plan={"clinicaltrials": {"nct_id": "NCT00973089"}, "pmc": {"pmcid": "PMC7906746"}},
                base_urls={n: wire.url for n in names}, timeouts_s={"openfda": SLOW_TIMEOUT_S},
                ingest=False, cache_ttl_hours=0)
            gather_evidence(params)
            for _ in range(runs):
                started = time.perf_counter()
                out = gather_evidence(params)
                wall.append(time.perf_counter() - started)
                inner.append(out["seconds"])
                labels = [o["outcome"] for o in out["outcomes"]]
    finally:
        pgserver.stop_embedded(home / "pgdata", discard=True)
    return inner, wall, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")   # slow under load (PLATFORM.md)
    router_s, router_labels = router_runs(args.runs)
    flow_inner, flow_wall, flow_labels = flow_runs(args.runs)
    rows = [(name, f"{statistics.median(seconds):.3f}", f"{min(seconds):.3f}", f"{max(seconds):.3f}",
             f"{SLOW_TIMEOUT_S:.2f}", f"{SLOW_ANSWER_S:.1f}+")
            for name, seconds in (("router, plain threads", router_s), ("flow, plan to ranked result", flow_inner),
                                  ("flow, whole call", flow_wall))]
    print(table(["run", "median s", "min s", "max s", "slow timeout s", "one after another s"], rows))
    print(f"router outcomes: {', '.join(router_labels)}")
    print(f"flow outcomes: {', '.join(flow_labels)}")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
