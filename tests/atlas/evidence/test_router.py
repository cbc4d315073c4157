"""The router over the five connectors: parallel, each source bounded by its own timeout, every
outcome typed; nothing personal leaves in any request; repeated questions are served from cache."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from urllib.parse import quote, quote_plus

from forum_atlas.evidence.registry import DEFAULT_SOURCES, build_connectors, outbound_log
from forum_atlas.evidence.retraction import RetractionWatchIndex
from forum_atlas.evidence.router import ProviderCache, gather
from tests.atlas.evidence.replay import body, crossref_message, recorded
from tests.support.wire import Reply, WireServer

PLANTED = ["Jane Q. Doe", "Okafor", "jane.doe@example.org", "+44 20 7946 0958", "4482913", "03/14/1961",
           "555-867-5309", "123-45-6789"]
QUESTION = ("Patient Jane Q. Doe (MRN 4482913, DOB 03/14/1961, jane.doe@example.org, tel +44 20 7946 0958, "
            "SSN 123-45-6789, cell 555-867-5309), seen with Dr Okafor: does metformin reduce cancer risk?")


def serve_all_five(wire, *, slow: str | None = None, failing: str | None = None) -> None:
    wire.always("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
    wire.always("/efetch.fcgi", recorded("pubmed/efetch_pubmed_20412080.xml"))
    wire.always("/search", recorded("europepmc/search_cancer_core.json", delay_s=5.0 if slow == "europepmc" else 0))
    wire.always("/works", recorded("openalex/works_filter_title.search_augmenting-llm-chemistry-tools.json"))
    study = json.loads(body("clinicaltrials/study_NCT00973089_withdrawn.json"))
    wire.always("/studies", Reply(200, {"studies": [study]}))
    wire.always("/drug/label.json", recorded("openfda/label_search_brand-generic-aspirin_2015.json"))
    if failing == "openalex":
        wire.always("/works", recorded("crossref/error_500_works_cursor-5_exception.json"))


def five(wire, sleeps, *, slow_timeout_s: float = 1.5):
    timeouts = {name: 3.0 for name in DEFAULT_SOURCES} | {"europepmc": slow_timeout_s}
    return build_connectors(DEFAULT_SOURCES, base_urls={n: wire.url for n in DEFAULT_SOURCES}, timeouts_s=timeouts,
                            sleep=sleeps.append)


def test_slow_and_failing_sources_cost_only_the_slow_sources_timeout(wire, sleeps):
    serve_all_five(wire, slow="europepmc", failing="openalex")
    connectors = five(wire, sleeps, slow_timeout_s=1.5)
    started = time.perf_counter()
    result = gather("metformin cancer", connectors, crossref=None, retraction_watch=None)
    elapsed = time.perf_counter() - started
    kinds = {o.source: o.kind for o in result.outcomes}
    assert kinds == {"pubmed": "ok", "europepmc": "timeout", "openalex": "unavailable", "clinicaltrials": "ok",
                     "openfda": "ok"}
    assert elapsed < 1.5 + 0.9, f"router took {elapsed:.2f} s; the slow source's timeout is 1.5 s, its answer 5 s"
    assert {o.label for o in result.outcomes} >= {"ok(1)", "timeout", "unavailable"}
    # No Crossref check configured: every DOI fails closed; the withdrawn trial is excluded for its own reason.
    reasons = {i.dedup_key: i.excluded_reason for i in result.excluded}
    assert "WITHDRAWN" in reasons["clinicaltrials:NCT00973089"]
    assert reasons["doi:10.1111/j.1399-0004.2010.01436.x"].startswith("retraction status unknown")
    assert [item.source for _, item in result.ranked] == ["openfda"]   # the label has no DOI: admitted


def test_no_outbound_request_carries_planted_personal_data(wire, sleeps):
    serve_all_five(wire)
    wire.always("/works/10.1111/j.1399-0004.2010.01436.x", crossref_message(
        "crossref/derived_pruned/cachewrapped_works_10.1038_s41586-020-2649-2.json"))
    connectors = five(wire, sleeps)
    checker = build_connectors(["crossref"], base_urls={"crossref": wire.url}, sleep=sleeps.append)["crossref"]
    result = gather(QUESTION, connectors, names=["Jane Q. Doe", "Okafor"], crossref=checker.work,
                    retraction_watch=RetractionWatchIndex())
    assert all(o.kind in ("ok", "empty") for o in result.outcomes), result.outcome_table()
    sent = outbound_log(connectors) + checker.http.sent
    assert len(sent) >= 6 and any("metformin" in line for line in sent)
    seen_by_server = [f"{r.method} {r.path} {r.headers} {r.body}" for r in wire.requests]
    for planted in PLANTED:
        forms = {planted, quote(planted), quote_plus(planted), quote(planted, safe=""), planted.replace(" ", "+")}
        for line in sent + seen_by_server:
            assert not any(form.lower() in line.lower() for form in forms), f"{planted!r} left in: {line}"
    assert result.removed == {"id_number": 2, "email": 1, "phone": 2, "date_of_birth": 1, "name": 2}


def annotations(result) -> list[tuple]:
    return sorted((item.dedup_key, tuple(item.notes), item.licence_reason) for _, item in result.ranked)


def test_repeated_question_is_answered_from_the_cache(wire, sleeps):
    serve_all_five(wire)
    connectors = five(wire, sleeps)
    cache = ProviderCache()
    first = gather("metformin cancer", connectors, cache=cache, retraction_watch=None)
    asked = len(wire.requests)
    second = gather("metformin cancer", connectors, cache=cache, retraction_watch=None)
    assert len(wire.requests) == asked
    assert [o.label for o in second.outcomes] == [o.label for o in first.outcomes]
    assert all(o.from_cache for o in second.outcomes)
    assert annotations(second) == annotations(first)   # a cached answer is not annotated twice


def test_the_order_is_deterministic(wire, sleeps):
    serve_all_five(wire)
    def crossref_knows_none(doi: str) -> None:   # every DOI checked, none retracted
        return None
    runs = [[(score, item.dedup_key) for score, item in
             gather("metformin cancer", five(wire, sleeps), crossref=crossref_knows_none, retraction_watch=None).ranked]
            for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) > 20
    scores = [score for score, _ in runs[0]]
    assert scores == sorted(scores, reverse=True)


def test_stored_answers_serve_the_same_source_version_only(wire, sleeps):
    """The cache as the flow stores it (JSON rows) answers a later run; a different endpoint is a
    different source version and is asked afresh."""
    serve_all_five(wire)
    cache = ProviderCache()
    first = gather("metformin cancer", five(wire, sleeps), cache=cache, retraction_watch=None)
    rows = [{**json.loads(json.dumps(row)), "stored_at": datetime.now(UTC)} for row in cache.fresh_rows()]
    assert [r["source"] for r in rows] and {r["source"] for r in rows} == set(DEFAULT_SOURCES)
    assert all(r["query"] == "metformin cancer" and wire.url in r["source_version"] for r in rows)
    stored = ProviderCache.from_rows(rows)
    asked = len(wire.requests)
    again = gather("metformin cancer", five(wire, sleeps), cache=stored, retraction_watch=None)
    assert len(wire.requests) == asked and all(o.from_cache for o in again.outcomes)
    assert annotations(again) == annotations(first) and stored.fresh_rows() == []
    assert {v["from_cache"] for v in again.source_versions.values()} == {True}
    with WireServer() as mirror:
        serve_all_five(mirror)
        elsewhere = gather("metformin cancer", five(mirror, sleeps), cache=stored, retraction_watch=None)
        assert not any(o.from_cache for o in elsewhere.outcomes) and len(mirror.requests) >= 6
