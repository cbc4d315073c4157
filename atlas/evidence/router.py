"""The evidence router: a query plan → every source in parallel, each with its own deadline → typed
outcomes → licence guard → retraction gate → de-duplication and deterministic ranking.

The question is de-identified once, before the plan is built, so no connector ever sees the
original text. A slow source costs at most its own timeout: the router stops waiting for it then
(its thread is abandoned, not joined) and types it `timeout`. Answers that were ok or empty are
cached by (source, de-identified query), so a repeated question does not ask again.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from forum_atlas.evidence.connectors.base import Connector
from forum_atlas.evidence.licence import apply_licence_guard
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery, SourceOutcome
from forum_atlas.evidence.outbound import OutboundQuery, deidentify_query
from forum_atlas.evidence.ranker import deduplicate, rank
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


class ProviderCache:
    """Answers by (source, de-identified query); only ok / empty answers are kept."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[SourceOutcome, list[EvidenceItem]]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(step: PlanStep) -> tuple:
        return step.source, step.query.text, step.query.limit, tuple(sorted(step.query.filters.items()))

    def get(self, step: PlanStep) -> tuple[SourceOutcome, list[EvidenceItem]] | None:
        with self._lock:
            hit = self._entries.get(self.key(step))
        # Copies: the guard, the gate and de-duplication annotate the items of each run.
        return None if hit is None else (hit[0], copy.deepcopy(hit[1]))

    def put(self, step: PlanStep, outcome: SourceOutcome, items: list[EvidenceItem]) -> None:
        if outcome.kind in ("ok", "empty"):
            with self._lock:
                self._entries[self.key(step)] = (outcome, copy.deepcopy(items))


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


def run_plan(plan: QueryPlan, connectors: Mapping[str, Connector], *, cache: ProviderCache | None = None,
             grace_s: float = 0.25) -> list[tuple[SourceOutcome, list[EvidenceItem]]]:
    """Every step in parallel; each source is waited for at most its timeout (+ grace), retries included."""
    started = time.perf_counter()
    results: dict[int, tuple[SourceOutcome, list[EvidenceItem]]] = {}
    pending: list[tuple[int, PlanStep, Future, float]] = []
    executor = ThreadPoolExecutor(max_workers=max(1, len(plan.steps)), thread_name_prefix="evidence")
    try:
        for index, step in enumerate(plan.steps):
            hit = cache.get(step) if cache else None
            if hit is not None:
                outcome, items = hit
                results[index] = (SourceOutcome(**{**asdict(outcome), "from_cache": True, "latency_ms": 0.0}), items)
                continue
            connector = connectors[step.source]
            budget = connector.http.timeout_s + grace_s
            pending.append((index, step, executor.submit(ask, connector, step), started + budget))
        for index, step, future, deadline in sorted(pending, key=lambda p: p[3]):
            try:
                results[index] = future.result(timeout=max(0.0, deadline - time.perf_counter()))
            except FutureTimeout:
                future.cancel()
                waited = round((time.perf_counter() - started) * 1000.0, 1)
                results[index] = (SourceOutcome(step.source, "timeout", latency_ms=waited,
                                                detail=f"no answer within {deadline - started:.2f} s"), [])
            else:
                if cache:
                    cache.put(step, *results[index])
    finally:
        executor.shutdown(wait=False, cancel_futures=True)   # never wait for an abandoned slow source
    return [results[i] for i in range(len(plan.steps))]


@dataclass
class GatherResult:
    plan: QueryPlan
    removed: dict[str, int]                      # de-identification report: kind -> count
    outcomes: list[SourceOutcome]
    ranked: list[tuple[float, EvidenceItem]]     # admitted, de-duplicated, best first
    excluded: list[EvidenceItem]                 # retraction gate, with reasons
    seconds: float = 0.0
    source_versions: dict[str, dict] = field(default_factory=dict)   # which endpoint answered, and when

    def outcome_table(self) -> list[dict]:
        return [{"source": o.source, "outcome": o.label, "latency_ms": o.latency_ms, "attempts": o.attempts,
                 "cached": o.from_cache, "detail": o.detail[:160]} for o in self.outcomes]


def gather(question: str, connectors: Mapping[str, Connector], *, sources: Iterable[str] | None = None,
           names: Iterable[str] = (), limit: int = 10, filters: Mapping[str, Mapping[str, str]] | None = None,
           crossref: CrossrefLookup | None = None, retraction_watch: RetractionWatchIndex | None = None,
           cache: ProviderCache | None = None) -> GatherResult:
    started = time.perf_counter()
    plan, outbound = plan_for(question, sources or list(connectors), names=names, limit=limit, filters=filters)
    retrieved_at = datetime.now(UTC).isoformat(timespec="seconds")
    runs = run_plan(plan, connectors, cache=cache)
    items = deduplicate([item for _, found in runs for item in found])
    apply_licence_guard(items)
    gated: GateResult = gate(items, crossref=crossref, retraction_watch=retraction_watch)
    versions = {step.source: {"endpoint": connectors[step.source].http.base_url, "retrieved_at": retrieved_at,
                              "rate_limit_per_s": connectors[step.source].spec.rate_per_s} for step in plan.steps}
    return GatherResult(plan, outbound.report(), [o for o, _ in runs], rank(plan.question, gated.admitted),
                        gated.excluded, round(time.perf_counter() - started, 3), versions)
