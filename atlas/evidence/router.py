"""The evidence router: a query plan → every source in parallel, each with its own deadline → typed
outcomes → licence guard → retraction gate → de-duplication and deterministic ranking.

The question is de-identified once, before the plan is built, so no connector ever sees the
original text. A slow source costs at most its own timeout: the router stops waiting for it then
(its thread is abandoned, not joined) and types it `timeout`. Answers that were ok or empty are
cached by (source, de-identified query, source version), so a repeated question does not ask again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from forum_atlas.evidence.connectors.base import Connector
from forum_atlas.evidence.licence import apply_licence_guard
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, SourceOutcome
from forum_atlas.evidence.outbound import OutboundQuery, deidentify_query
from forum_atlas.evidence.ranker import deduplicate, rank
from forum_atlas.evidence.registry import source_version
from forum_atlas.evidence.retraction import CrossrefLookup, GateResult, RetractionWatchIndex, gate
from forum_atlas.providers import ProviderError


@dataclass(frozen=True)
class PlanStep:
    source: str
    query: EvidenceQuery


@dataclass(frozen=True)
class QueryPlan:
    question: str                 # de-identified
    steps: tuple[PlanStep, ...]

    def as_dict(self) -> dict:
        return {"question": self.question, "steps": [asdict(s) for s in self.steps]}


def plan_for(question: str, sources: Iterable[str], *, names: Iterable[str] = (), limit: int = 10,
             filters: Mapping[str, Mapping[str, str]] | None = None) -> tuple[QueryPlan, OutboundQuery]:
    outbound = deidentify_query(question, names=names)
    steps = tuple(PlanStep(s, EvidenceQuery(outbound.text, limit, dict((filters or {}).get(s, {})))) for s in sources)
    return QueryPlan(outbound.text, steps), outbound


CachedAnswer = tuple[SourceOutcome, list[EvidenceItem], str]   # outcome, items, when the source answered


class ProviderCache:
    """Answers by (source, de-identified query, source version); only ok / empty answers are kept.

    It lives in memory for one run: the gather flow fills it from `forum.evidence_cache` (entries
    younger than the TTL) and stores what the run added (`fresh_rows`), so the cache holds across runs.
    """

    def __init__(self, entries: Iterable[tuple[str, str, str, CachedAnswer]] = ()) -> None:
        self._entries: dict[tuple[str, str, str], CachedAnswer] = {
            (source, digest, version): answer for source, digest, version, answer in entries}
        self._fresh: list[tuple[PlanStep, str, CachedAnswer]] = []
        self._lock = threading.Lock()

    @staticmethod
    def digest(step: PlanStep) -> str:
        """sha256 of the de-identified step: source, outbound text, limit and filters."""
        key = [step.source, step.query.text, step.query.limit, sorted(step.query.filters.items())]
        return hashlib.sha256(json.dumps(key, ensure_ascii=False).encode("utf-8")).hexdigest()

    def get(self, step: PlanStep, version: str) -> CachedAnswer | None:
        with self._lock:
            hit = self._entries.get((step.source, self.digest(step), version))
        # Copies: the guard, the gate and de-duplication annotate the items of each run.
        return None if hit is None else (hit[0], copy.deepcopy(hit[1]), hit[2])

    def put(self, step: PlanStep, version: str, outcome: SourceOutcome, items: list[EvidenceItem],
            retrieved_at: str) -> None:
        if outcome.kind in ("ok", "empty"):
            answer = (outcome, copy.deepcopy(items), retrieved_at)
            with self._lock:
                self._entries[(step.source, self.digest(step), version)] = answer
                self._fresh.append((step, version, answer))

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> ProviderCache:
        """A cache holding stored entries (`forum.evidence_cache` rows)."""
        return cls((row["source"], row["query_digest"], row["source_version"],
                    (SourceOutcome.from_dict(row["outcome"]), [EvidenceItem.from_dict(i) for i in row["items"]],
                     row["stored_at"].isoformat(timespec="seconds"))) for row in rows)

    def fresh_rows(self) -> list[dict[str, Any]]:
        """The answers this run added, as rows to store for later runs."""
        with self._lock:
            fresh = list(self._fresh)
        return [{"source": step.source, "query_digest": self.digest(step), "source_version": version,
                 "query": step.query.text, "outcome": outcome.as_dict(), "items": [i.as_dict() for i in items]}
                for step, version, (outcome, items, _) in fresh]


def ask(connector: Connector, step: PlanStep) -> tuple[SourceOutcome, list[EvidenceItem]]:
    """One source, one typed outcome: never an exception, never an unexplained empty list."""
    started = time.perf_counter()
    try:
        items = connector.search(step.query)
    except ProviderError as exc:
        outcome = SourceOutcome(step.source, exc.kind,  # type: ignore[arg-type]
                                attempts=exc.attempts, detail=exc.detail[:500])
        items = []
    except Exception as exc:  # noqa: BLE001 - a parser tripping over an unexpected shape is a typed bad_response
        outcome = SourceOutcome(step.source, "bad_response", detail=f"{type(exc).__name__}: {exc}"[:500])
        items = []
    else:
        outcome = SourceOutcome(step.source, "ok" if items else "empty", n=len(items))
        for position, item in enumerate(items):
            item.source_rank = position
    outcome.latency_ms = round((time.perf_counter() - started) * 1000.0, 1)
    return outcome, items


@dataclass
class SourceAnswer:
    """One plan step's result: the typed outcome, the items, and which version of the source answered."""
    outcome: SourceOutcome
    items: list[EvidenceItem]
    version: dict[str, Any]


def answer(step: PlanStep, connector: Connector, *, cache: ProviderCache | None = None,
           grace_s: float = 0.25) -> SourceAnswer:
    """One source from the cache, or asked and waited for at most its timeout (+ grace), retries
    included. A source still busy then is typed `timeout` and its (daemon) thread abandoned, never
    joined, so a slow source costs its own timeout and nothing more."""
    version = source_version(connector)
    info = {"endpoint": connector.http.base_url, "version": version, "rate_limit_per_s": connector.spec.rate_per_s}
    hit = cache.get(step, version) if cache else None
    if hit is not None:
        outcome, items, retrieved_at = hit
        return SourceAnswer(replace(outcome, from_cache=True, latency_ms=0.0), items,
                            {**info, "retrieved_at": retrieved_at, "from_cache": True})
    retrieved_at = datetime.now(UTC).isoformat(timespec="seconds")
    budget = connector.http.timeout_s + grace_s
    box: list[tuple[SourceOutcome, list[EvidenceItem]]] = []
    worker = threading.Thread(target=lambda: box.append(ask(connector, step)), daemon=True,
                              name=f"evidence-{step.source}")
    worker.start()
    worker.join(budget)
    if box:
        outcome, items = box[0]
        if cache:
            cache.put(step, version, outcome, items, retrieved_at)
    else:
        outcome, items = SourceOutcome(step.source, "timeout", latency_ms=round(budget * 1000.0, 1),
                                       detail=f"no answer within {budget:.2f} s"), []
    return SourceAnswer(outcome, items, {**info, "retrieved_at": retrieved_at, "from_cache": False})


def run_plan(plan: QueryPlan, connectors: Mapping[str, Connector], *,
             cache: ProviderCache | None = None) -> list[SourceAnswer]:
    """Every step in parallel threads, each bounded by its own source's timeout (see `answer`). The
    gather flow runs the same `answer` as one Prefect task per source instead."""
    with ThreadPoolExecutor(max_workers=max(1, len(plan.steps)), thread_name_prefix="evidence") as pool:
        return list(pool.map(lambda step: answer(step, connectors[step.source], cache=cache), plan.steps))


@dataclass
class GatherResult:
    plan: QueryPlan
    removed: dict[str, int]                      # de-identification report: kind -> count
    outcomes: list[SourceOutcome]
    ranked: list[tuple[float, EvidenceItem]]     # admitted, de-duplicated, best first
    excluded: list[EvidenceItem]                 # retraction gate, with reasons
    seconds: float = 0.0
    source_versions: dict[str, dict] = field(default_factory=dict)   # which endpoint/version answered, and when

    def outcome_table(self) -> list[dict]:
        return [{"source": o.source, "outcome": o.label, "latency_ms": o.latency_ms, "attempts": o.attempts,
                 "cached": o.from_cache, "detail": o.detail[:160]} for o in self.outcomes]


def screen(plan: QueryPlan, removed: dict[str, int], answers: list[SourceAnswer], *,
           crossref: CrossrefLookup | None, retraction_watch: RetractionWatchIndex | None,
           started: float) -> GatherResult:
    """What the sources said → de-duplication → licence guard → retraction gate → deterministic rank."""
    items = deduplicate([item for a in answers for item in a.items])
    apply_licence_guard(items)
    gated: GateResult = gate(items, crossref=crossref, retraction_watch=retraction_watch)
    return GatherResult(plan, removed, [a.outcome for a in answers], rank(plan.question, gated.admitted),
                        gated.excluded, round(time.perf_counter() - started, 3),
                        {a.outcome.source: a.version for a in answers})


def gather(question: str, connectors: Mapping[str, Connector], *, sources: Iterable[str] | None = None,
           names: Iterable[str] = (), limit: int = 10, filters: Mapping[str, Mapping[str, str]] | None = None,
           crossref: CrossrefLookup | None = None, retraction_watch: RetractionWatchIndex | None = None,
           cache: ProviderCache | None = None) -> GatherResult:
    started = time.perf_counter()
    plan, outbound = plan_for(question, sources or list(connectors), names=names, limit=limit, filters=filters)
    answers = run_plan(plan, connectors, cache=cache)
    return screen(plan, outbound.report(), answers, crossref=crossref, retraction_watch=retraction_watch,
                  started=started)
