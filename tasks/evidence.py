"""Evidence-gathering tasks: ask the sources (the router runs them in parallel threads, each bounded
by its own timeout) and record the run with what became of every record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from forum_atlas.config import Settings
from forum_atlas.evidence.documents import record_rows
from forum_atlas.evidence.registry import build_connectors
from forum_atlas.evidence.retraction import RetractionWatchIndex
from forum_atlas.evidence.router import GatherResult, gather
from forum_atlas.store import evidence
from forum_atlas.store.db import shared_database
from forum_atlas.tasks import flow_run_id

evidence_task = task(cache_policy=NO_CACHE, persist_result=False)


@evidence_task(name="ask-sources")
def ask_sources(question: str, sources: Sequence[str], *, names: Sequence[str] = (), limit: int = 10,
                filters: Mapping[str, Mapping[str, str]] | None = None, base_urls: Mapping[str, str] | None = None,
                timeouts_s: Mapping[str, float] | None = None, check_crossref: bool = True,
                retraction_watch_csv: str | None = None) -> GatherResult:
    connectors = build_connectors(sources, base_urls=base_urls, timeouts_s=timeouts_s)
    checker = build_connectors(["crossref"], base_urls=base_urls, timeouts_s=timeouts_s)["crossref"] \
        if check_crossref else None
    index = RetractionWatchIndex.from_csv(Path(retraction_watch_csv).read_text(encoding="utf-8")) \
        if retraction_watch_csv else None
    return gather(question, connectors, names=names, limit=limit, filters=filters,
                  crossref=checker.work if checker else None, retraction_watch=index)


@evidence_task(name="record-evidence-run")
def record_evidence_run(settings: Settings, result: GatherResult) -> int:
    return evidence.record_run(shared_database(settings), question=result.plan.question, plan=result.plan.as_dict(),
                               redactions=result.removed, outcomes=[o.as_dict() for o in result.outcomes],
                               source_versions=result.source_versions, records=record_rows(result),
                               flow_run_id=flow_run_id())
