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


def test_exclusion_reasons_are_there_for_a_later_brief(atlas_env, database_url, sources, db):
    from forum_atlas.store.evidence import exclusion_reasons, load_run

    out = run(sources, ingest=False)
    reasons = exclusion_reasons(db, ["clinicaltrials:NCT00973089", "doi:10.1111/j.1399-0004.2010.01436.x"])
    assert list(reasons) == ["clinicaltrials:NCT00973089"] and "WITHDRAWN" in reasons["clinicaltrials:NCT00973089"]
    assert out["documents_added"] == 0 and rows(database_url, "SELECT count(*) FROM forum.documents") == [(0,)]
    assert len(load_run(db, out["run_id"])["records"]) == 4


def test_a_failing_source_is_a_typed_outcome_not_a_failed_run(atlas_env, database_url, sources):
    sources.always("/drug/label.json", recorded("openfda/error_403_drugsfda_api-key-invalid.json"))
    sources.always("/esearch.fcgi", recorded("pubmed/esearch_protein_no_hits_phrasenotfound.xml"))
    out = run(sources)
    kinds = {o["source"]: o["outcome"] for o in out["outcomes"]}
    assert kinds["openfda"] == "auth" and kinds["pubmed"] == "bad_response"
    assert out["documents_added"] == 0
