"""Gather evidence (EVB-1…4, ING-6): a question (or a per-source query plan) in; the open sources
asked in parallel, each outcome typed; licence guard and retraction gate (fail closed); the records
that may support a claim ingested through the ingest flow (versioned, validated); the run, its
per-source outcome table and what became of every record stored in `forum.evidence_runs/records`.

The question is de-identified here, before any task sees it: tasks and connectors only get the
outbound text. Each source is one task run (`ask-<source>`), submitted together and each bounded by
its own timeout, so a slow source costs its timeout and nothing more. Answers come from the
provider cache (`forum.evidence_cache`, keyed by source, de-identified query and source version)
when a stored one is younger than `cache_ttl_hours`; the outcome table says which.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_table_artifact
from pydantic import Field

from forum_atlas.blocks.database import AtlasDatabase
from forum_atlas.blocks.providers import AtlasProviders
from forum_atlas.blocks.settings import resolve_settings
from forum_atlas.evidence.documents import write_documents
from forum_atlas.evidence.router import plan_for
from forum_atlas.tasks.evidence import (
    GatherOptions,
    ask_source,
    open_provider_cache,
    record_evidence_run,
    screen_answers,
)


class GatherParameters(GatherOptions):
    question: str = Field(min_length=3, max_length=4000, description="what to look for; de-identified before it leaves")


@flow(name="gather-evidence", log_prints=True)
def gather_evidence(params: GatherParameters, database_block: AtlasDatabase | None = None,
                    providers_block: AtlasProviders | None = None) -> dict:
    """Ask the open sources about a question, screen what they return, ingest what may support a claim.

    Args:
        params: the question, the sources to ask and how (filters, limits, timeouts, cache), and whether to ingest
        database_block: the Forum Atlas Database block to use; empty = the worker's ATLAS_* environment
        providers_block: the Forum Atlas Providers block (the ingest's embedder); empty = the worker's environment
    """
    settings = resolve_settings(database_block, providers_block)
    started = time.perf_counter()
    plan, outbound = plan_for(params.question, params.sources, names=params.names, limit=params.limit,
                              filters=params.plan)
    cache = open_provider_cache(settings, plan, params.cache_ttl_hours)
    asked = [ask_source.submit(step, cache, params.base_urls, params.timeouts_s) for step in plan.steps]
    result = screen_answers(plan, outbound.report(), [future.result() for future in asked], started,
                            base_urls=params.base_urls, timeouts_s=params.timeouts_s,
                            check_crossref=params.check_crossref, retraction_watch_csv=params.retraction_watch_csv)
    ingested: dict = {}
    if params.ingest:
        from forum_atlas.flows.ingest import ingest  # here: its import starts great-expectations' warm-up

        with tempfile.TemporaryDirectory(prefix="atlas-evidence-") as folder:
            path = Path(folder) / "evidence.jsonl"
            if write_documents(result, path):
                ingested = ingest(str(path), format="jsonl", database_block=database_block,
                                  providers_block=providers_block)
    run_id = record_evidence_run(settings, result, cache)
    table = result.outcome_table()
    create_table_artifact(key="evidence-outcomes", table=table, description="typed outcome of every source asked")
    counts = {"ranked": len(result.ranked), "excluded": len(result.excluded),
              "may_support": sum(1 for _, item in result.ranked if item.may_support)}
    print("evidence: " + ", ".join(f"{row['source']} {row['outcome']}" for row in table)
          + f"; {counts['may_support']} may support a claim, {len(result.ranked) - counts['may_support']} context only,"
            f" {counts['excluded']} excluded")
    return {"run_id": run_id, "question": outbound.text, "removed": result.removed, "outcomes": table, **counts,
            "plan": plan.as_dict(), "source_versions": result.source_versions,
            "documents_added": ingested.get("documents_added", 0), "seconds": result.seconds}
