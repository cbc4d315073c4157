"""The gather-evidence flow under a real (temporary) Prefect API, on a per-test PostgreSQL, asking
sources that replay real recorded responses: typed outcomes, supporting records ingested through the
ingest flow, context-only and excluded records stored with their reasons, nothing personal stored."""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.atlas.evidence.replay import crossref_message, recorded
from tests.support.wire import WireServer

QUESTION = "Jane Roe (MRN 4482913, jane.roe@example.org) asks: what is known about the human phenotype ontology?"


@pytest.fixture
def atlas_env(monkeypatch, database_url, prefect_env):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")


@pytest.fixture
def sources():
    with WireServer() as wire:
        wire.always("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
        wire.always("/efetch.fcgi", recorded("pubmed/efetch_pubmed_20412080.xml"))
        wire.always("/studies/NCT00973089", recorded("clinicaltrials/study_NCT00973089_withdrawn.json"))
        wire.always("/drug/label.json", recorded("openfda/label_search_brand-generic-aspirin_2015.json"))
        wire.always("/oa.fcgi", recorded("pmc/oa-fcgi_id-PMC7906746_tgz-link.xml"))
        wire.always("/works/10.1111/j.1399-0004.2010.01436.x", crossref_message(
            "crossref/derived_pruned/cachewrapped_works_10.1038_s41586-020-2649-2.json"))
        yield wire


def run(wire: WireServer, **overrides):
    from forum_atlas.flows.gather_evidence import GatherParameters, gather_evidence

    names = ("pubmed", "clinicaltrials", "openfda", "pmc", "pmc-oa", "crossref")
    params = {"question": QUESTION, "names": ["Jane Roe"], "sources": ["pubmed", "clinicaltrials", "openfda", "pmc"],
              "plan": {"clinicaltrials": {"nct_id": "NCT00973089"}, "pmc": {"pmcid": "PMC7906746"}},
              "base_urls": {n: wire.url for n in names}, **overrides}
    return gather_evidence(GatherParameters(**params))


BM25 = {"k1": 1.5, "b": 0.75, "epsilon": 0.25}


def rows(url: str, query: str, *args) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()


def test_gather_ingests_supporting_records_and_stores_the_rest_with_reasons(atlas_env, database_url, sources):
    out = run(sources)
    assert {o["source"]: o["outcome"] for o in out["outcomes"]} == {
        "pubmed": "ok(1)", "clinicaltrials": "ok(1)", "openfda": "ok(1)", "pmc": "ok(1)"}
    assert out["removed"] == {"id_number": 1, "email": 1, "name": 1}
    documents = rows(database_url, "SELECT d.external_id, s.name FROM forum.documents d "
                                   "JOIN forum.sources s USING (source_id) ORDER BY 1")
    assert documents == [("doi:10.1111/j.1399-0004.2010.01436.x", "PubMed (NCBI E-utilities)"),
                         ("openfda:label:0025eb89-590c-4451-8a06-b129686cf75a", "openFDA")]
    assert out["documents_added"] == 2
    records = {key: (status, reason) for key, status, reason in rows(
        database_url, "SELECT record_key, status, reason FROM forum.evidence_records WHERE run_id = %s", out["run_id"])}
    status, reason = records["clinicaltrials:NCT00973089"]
    assert status == "excluded" and "WITHDRAWN" in reason
    assert records["pmc:PMC7906746"][0] == "context_only"
    assert records["doi:10.1111/j.1399-0004.2010.01436.x"][0] == "ingested"
    (question, plan, outcomes, versions), = rows(
        database_url, "SELECT question, plan, outcomes, source_versions FROM forum.evidence_runs")
    assert "Jane" not in question and "4482913" not in question and "[EMAIL]" in question
    assert [s["source"] for s in plan["steps"]] == ["pubmed", "clinicaltrials", "openfda", "pmc"]
    assert {o["label"] for o in outcomes} == {"ok(1)"}
    assert set(versions) == {"pubmed", "clinicaltrials", "openfda", "pmc"}
    assert not any("Jane" in json.dumps(r.headers) or "Roe" in r.path for r in sources.requests)


def test_withheld_records_are_matched_with_their_reasons(atlas_env, database_url, sources, db):
    from forum_atlas.store.evidence import load_run, withheld_matches

    out = run(sources, ingest=False)
    assert out["documents_added"] == 0 and rows(database_url, "SELECT count(*) FROM forum.documents") == [(0,)]
    assert len(load_run(db, out["run_id"])["records"]) == 4
    # The withdrawn trial (retraction gate) and the PMC record without an open licence (context only)
    # are withheld; a query matches the one whose words it shares, down to a score floor.
    trial = withheld_matches(db, "treatment of deep carious lesions", **BM25, floor=0)
    assert [r["record_key"] for r in trial] == ["clinicaltrials:NCT00973089"]
    assert trial[0]["status"] == "excluded" and "WITHDRAWN" in trial[0]["reason"]
    assert withheld_matches(db, "treatment of deep carious lesions", **BM25, floor=trial[0]["score"] + 0.01) == []
    (pmc,) = withheld_matches(db, "Lancet 2021 February", **BM25, floor=0)
    assert pmc["record_key"] == "pmc:PMC7906746" and pmc["status"] == "context_only"
    # Recorded as supporting, but with ingest off there is no document either: not "withheld".
    assert withheld_matches(db, "human phenotype ontology", **BM25, floor=0) == []


def test_a_record_found_retracted_later_leaves_retrieval(atlas_env, database_url, sources, db):
    """Run 1 ingests the PubMed abstract (Crossref: no retraction); run 2 hears from Crossref that
    it was retracted: the document leaves retrieval and is withheld with Crossref's reason."""
    from forum_atlas.store.evidence import withheld_matches

    doi = "doi:10.1111/j.1399-0004.2010.01436.x"
    run(sources)
    searchable = "SELECT bool_and(c.searchable) FROM forum.chunks c JOIN forum.documents d USING (document_id) " \
                 "WHERE d.external_id = %s"
    assert rows(database_url, searchable, doi) == [(True,)]
    assert withheld_matches(db, "human phenotype ontology", **BM25, floor=0) == []
    # A real Crossref record with `updated-by` retraction, served for this DOI.
    sources.always("/works/10.1111/j.1399-0004.2010.01436.x", crossref_message(
        "crossref/derived_pruned/cachewrapped_works_10.1016_s0140-6736-97-11096-0.json"))
    second = run(sources)
    assert second["excluded"] == 2 and second["documents_added"] == 0
    assert rows(database_url, searchable, doi) == [(False,)]
    (withheld,) = withheld_matches(db, "human phenotype ontology", **BM25, floor=0)
    assert withheld["record_key"] == doi and withheld["status"] == "excluded"
    assert "retraction" in withheld["reason"] and "10.1016/s0140-6736(10)60175-4" in withheld["reason"]


def test_a_repeated_question_is_answered_from_the_stored_cache(atlas_env, database_url, sources):
    first = run(sources, ingest=False)
    asked = [r.path for r in sources.requests if not r.path.startswith("/works/")]
    second = run(sources, ingest=False)
    assert [r.path for r in sources.requests if not r.path.startswith("/works/")] == asked   # no source asked again
    assert [o["cached"] for o in first["outcomes"]] == [False] * 4
    assert [o["cached"] for o in second["outcomes"]] == [True] * 4
    assert [o["outcome"] for o in second["outcomes"]] == [o["outcome"] for o in first["outcomes"]]
    assert {v["from_cache"] for v in second["source_versions"].values()} == {True}
    # The retraction gate is not cached: Crossref is asked on every run.
    assert len(sources.requests_to("/works/10.1111/j.1399-0004.2010.01436.x")) == 2
    stored = rows(database_url, "SELECT source, query, source_version FROM forum.evidence_cache ORDER BY source")
    assert [s for s, _, _ in stored] == ["clinicaltrials", "openfda", "pmc", "pubmed"]
    assert all("Jane" not in q and "4482913" not in q and sources.url in v for _, q, v in stored)
    third = run(sources, ingest=False, cache_ttl_hours=0)
    assert [o["cached"] for o in third["outcomes"]] == [False] * 4


def test_a_failing_source_is_a_typed_outcome_not_a_failed_run(atlas_env, database_url, sources):
    sources.always("/drug/label.json", recorded("openfda/error_403_drugsfda_api-key-invalid.json"))
    sources.always("/esearch.fcgi", recorded("pubmed/esearch_protein_no_hits_phrasenotfound.xml"))
    out = run(sources)
    kinds = {o["source"]: o["outcome"] for o in out["outcomes"]}
    assert kinds["openfda"] == "auth" and kinds["pubmed"] == "bad_response"
    assert out["documents_added"] == 0


def test_each_source_is_its_own_task_run_and_a_slow_one_costs_only_its_timeout(atlas_env, sources):
    """openFDA answers after 5 s (its timeout: 1.5 s), ClinicalTrials.gov refuses (403): asking the
    sources and screening their answers takes about the slow source's timeout, each source has its
    own task run, every outcome is typed."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from forum_atlas.flows.gather_evidence import GatherParameters, gather_evidence

    sources.always("/drug/label.json", recorded("openfda/label_search_brand-generic-aspirin_2015.json", delay_s=5.0))
    sources.always("/studies/NCT00973089", recorded("openfda/error_403_drugsfda_api-key-invalid.json"))
    names = ("pubmed", "clinicaltrials", "openfda", "pmc", "pmc-oa", "crossref")
    params = GatherParameters(question=QUESTION, sources=["pubmed", "clinicaltrials", "openfda", "pmc"],
                              plan={"clinicaltrials": {"nct_id": "NCT00973089"}, "pmc": {"pmcid": "PMC7906746"}},
                              base_urls={n: sources.url for n in names}, timeouts_s={"openfda": 1.5},
                              ingest=False, cache_ttl_hours=0)
    state = gather_evidence(params, return_state=True)
    out = state.result()
    assert {o["source"]: o["outcome"] for o in out["outcomes"]} == {
        "pubmed": "ok(1)", "clinicaltrials": "auth", "openfda": "timeout", "pmc": "ok(1)"}
    # From the plan to the ranked result: the slow source's 1.75 s budget plus task bookkeeping and the
    # Crossref look-up, never its 5 s answer (nor the sum of all sources).
    assert out["seconds"] < 4.0, f"took {out['seconds']:.2f} s; the slow source's timeout is 1.5 s, its answer 5 s"
    slow = next(o for o in out["outcomes"] if o["source"] == "openfda")
    assert slow["latency_ms"] <= 1750.0 and slow["detail"] == "no answer within 1.75 s"
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    asked = sorted(r.name for r in runs if r.name.startswith("ask-"))
    assert asked == ["ask-clinicaltrials", "ask-openfda", "ask-pmc", "ask-pubmed"]
