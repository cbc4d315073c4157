"""Evidence-gathering tasks: open the provider cache, ask each source (one task run per source, each
bounded by its own timeout), screen the answers (licence guard, retraction gate, ranking), record
the run with what became of every record; and, for a brief, the withheld records its retrieval
would have matched."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from forum_atlas.config import Settings
from forum_atlas.evidence.documents import EVIDENCE_SECTOR, SOURCE_INFO, record_rows
from forum_atlas.evidence.registry import DEFAULT_SOURCES, build_connectors
from forum_atlas.evidence.retraction import RetractionWatchIndex
from forum_atlas.evidence.router import GatherResult, PlanStep, ProviderCache, QueryPlan, SourceAnswer, answer, screen
from forum_atlas.retrieval.model import RetrievalResult
from forum_atlas.store import evidence
from forum_atlas.store.db import shared_database
from forum_atlas.tasks import flow_run_id

evidence_task = task(cache_policy=NO_CACHE, persist_result=False)

Source = Literal["pubmed", "cochrane", "pmc", "europepmc", "openalex", "clinicaltrials", "openfda", "crossref",
                 "dailymed", "medlineplus"]


class GatherOptions(BaseModel):
    """How to gather: everything but the question (the deliberate flow passes these through)."""
    sources: list[Source] = Field(default=list(DEFAULT_SOURCES), min_length=1, description="sources to ask in parallel")
    plan: dict[Source, dict[str, str]] = Field(
        default_factory=dict, description="per-source filters, e.g. {\"openfda\": {\"endpoint\": \"event\"}}, "
        "{\"pmc\": {\"pmcid\": \"PMC7906746\"}}, {\"clinicaltrials\": {\"nct_id\": \"NCT00973089\"}}")
    limit: int = Field(default=10, ge=1, le=100, description="records per source")
    names: list[str] = Field(default_factory=list, description="names to remove from the outbound query")
    check_crossref: bool = Field(default=True, description="retraction gate: look every DOI up in Crossref")
    retraction_watch_csv: str | None = Field(default=None, description="path of the Retraction Watch CSV")
    timeouts_s: dict[str, float] = Field(default_factory=dict, description="per-source timeout overrides (seconds)")
    base_urls: dict[str, str] = Field(default_factory=dict, description="per-source address overrides (mirrors)")
    ingest: bool = Field(default=True, description="ingest the records that may support a claim")
    cache_ttl_hours: float = Field(default=24.0, ge=0, description="reuse a source's stored answer to the same "
                                   "de-identified query this young (hours); 0 = always ask")




@evidence_task(name="open-provider-cache")
def open_provider_cache(settings: Settings, plan: QueryPlan, ttl_hours: float) -> ProviderCache:
    """The stored answers to these very (de-identified) steps that are younger than the TTL."""
    keys = [(step.source, ProviderCache.digest(step)) for step in plan.steps]
    return ProviderCache.from_rows(evidence.cached_answers(shared_database(settings), keys, max_age_hours=ttl_hours))


@evidence_task(name="ask-source", task_run_name="ask-{step.source}")
def ask_source(step: PlanStep, cache: ProviderCache, base_urls: Mapping[str, str] | None = None,
               timeouts_s: Mapping[str, float] | None = None) -> SourceAnswer:
    """One source: from the cache, or asked and waited for at most its own timeout (retries with
    back-off inside it, honouring Retry-After); every result a typed outcome, never an exception."""
    connector = build_connectors([step.source], base_urls=base_urls, timeouts_s=timeouts_s)[step.source]
    return answer(step, connector, cache=cache)


@evidence_task(name="screen-answers")
def screen_answers(plan: QueryPlan, removed: dict[str, int], answers: list[SourceAnswer], started: float, *,
                   base_urls: Mapping[str, str] | None = None, timeouts_s: Mapping[str, float] | None = None,
                   check_crossref: bool = True, retraction_watch_csv: str | None = None) -> GatherResult:
    checker = build_connectors(["crossref"], base_urls=base_urls, timeouts_s=timeouts_s)["crossref"] \
        if check_crossref else None
    index = RetractionWatchIndex.from_csv(Path(retraction_watch_csv).read_text(encoding="utf-8")) \
        if retraction_watch_csv else None
    return screen(plan, removed, answers, crossref=checker.work if checker else None, retraction_watch=index,
                  started=started)


@evidence_task(name="record-evidence-run")
def record_evidence_run(settings: Settings, result: GatherResult, cache: ProviderCache) -> int:
    """The run and its records (an excluded record ingested by an earlier run leaves retrieval), then
    the answers this run added to the provider cache."""
    db = shared_database(settings)
    run_id = evidence.record_run(db, question=result.plan.question, plan=result.plan.as_dict(),
                                 redactions=result.removed, outcomes=[o.as_dict() for o in result.outcomes],
                                 source_versions=result.source_versions, records=record_rows(result),
                                 document_sources=[info["name"] for info in SOURCE_INFO.values()],
                                 flow_run_id=flow_run_id())
    evidence.store_answers(db, cache.fresh_rows())
    return run_id


@evidence_task(name="withheld-sources")
def withheld_sources(settings: Settings, results: Mapping[str, RetrievalResult]) -> list[dict]:
    """Records the retraction gate excluded (or the licence guard kept as context only) that a
    persona's retrieval would have matched: BM25 would have scored them at least as high as the
    lowest BM25 candidate it returned (any positive score when BM25 returned fewer than its k).
    One row per record (its best match), naming the personas whose retrieval it would have entered."""
    db = shared_database(settings)
    found: dict[str, dict] = {}
    for role, result in results.items():
        if result.options.sectors is not None and EVIDENCE_SECTOR not in result.options.sectors:
            continue   # outside the brief's sector filter: it would not have matched anyway
        stage = result.stage("bm25")
        if stage is None:
            continue
        floor = min(c.score for c in stage.candidates) if len(stage.candidates) >= stage.parameters["k"] else 0.0
        bm25 = stage.parameters
        for row in evidence.withheld_matches(db, result.query, k1=bm25["k1"], b=bm25["b"], epsilon=bm25["epsilon"],
                                             floor=floor):
            seen = found.setdefault(row["record_key"], {**row, "roles": []})
            seen["roles"].append(role)
            seen["score"] = max(seen["score"], row["score"])
    return sorted(found.values(), key=lambda r: (-r["score"], r["record_key"]))
