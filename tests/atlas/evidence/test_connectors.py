"""Each connector parses the real recorded responses, served over HTTP through the production client,
and maps the recorded error bodies to the right typed outcome."""

from __future__ import annotations

import json

import pytest

from forum_atlas.evidence.licence import apply_licence_guard
from forum_atlas.evidence.model import EvidenceQuery
from forum_atlas.evidence.router import PlanStep, ask
from tests.atlas.evidence.replay import body, recorded
from tests.support.wire import Reply


def outcome(connector, source: str, text: str = "q", **filters: str):
    return ask(connector, PlanStep(source, EvidenceQuery(text, 20, filters)))


def test_pubmed_esearch_then_efetch(wire, connect):
    wire.queue("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
    wire.queue("/efetch.fcgi", recorded("pubmed/efetch_pubmed_11748933-11700088.xml"))
    result, items = outcome(connect("pubmed")["pubmed"], "pubmed", "biopython")
    assert result.label == "ok(2)"
    assert [(i.pmid, i.doi) for i in items] == [("11748933", "10.1006/cryo.2001.2328"),
                                                ("11700088", "10.1006/jmre.2001.2429")]
    assert items[0].text.startswith("Cryopreservation") or len(items[0].text) > 500
    efetch = wire.requests_to("/efetch.fcgi")
    assert len(efetch) == 1


def test_pubmed_ids_of_the_esearch_reach_efetch(wire, connect):
    pubmed = connect("pubmed")["pubmed"]
    wire.queue("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
    wire.queue("/efetch.fcgi", recorded("pubmed/efetch_pubmed_20412080.xml"))
    pubmed.search(EvidenceQuery("biopython", 20))
    assert "id=41282813%2C41148224" in pubmed.http.sent[1]


def test_pubmed_error_list_with_zero_hits_is_not_ok(wire, connect):
    wire.queue("/esearch.fcgi", recorded("pubmed/esearch_protein_no_hits_phrasenotfound.xml"))
    result, items = outcome(connect("pubmed")["pubmed"], "pubmed", "abcXYZ")
    assert result.kind == "bad_response" and items == []
    assert "PhraseNotFound" in result.detail
    assert wire.requests_to("/efetch.fcgi") == []


def test_cochrane_is_pubmed_with_a_journal_filter(wire, connect):
    cochrane = connect("cochrane")["cochrane"]
    wire.queue("/esearch.fcgi", recorded("pubmed/esearch_pubmed_term-biopython.xml"))
    wire.queue("/efetch.fcgi", recorded("pubmed/efetch_pubmed_23121403.xml"))
    result, items = outcome(cochrane, "cochrane", "statins")
    assert result.label == "ok(1)" and items[0].source == "cochrane"
    assert "Cochrane+Database+Syst+Rev" in cochrane.http.sent[0]


def test_europepmc_core_search_and_zero_hits(wire, connect):
    epmc = connect("europepmc")["europepmc"]
    wire.queue("/search", recorded("europepmc/search_cancer_core.json"), recorded("europepmc/search_no_results.json"))
    result, items = outcome(epmc, "europepmc", "cancer")
    assert result.label == "ok(25)"
    apply_licence_guard(items)
    open_ones = [i for i in items if i.licence == "cc by" and i.text]
    assert open_ones and all(i.may_support for i in open_ones)
    assert all(not i.may_support for i in items if not i.text)   # a record with no abstract cannot support
    result, items = outcome(epmc, "europepmc", "asdkfjhasdkfjhasdfasdasdasdfgsagsd")
    assert result.kind == "empty" and items == []


def test_openalex_search_doi_lookup_and_404_html(wire, connect):
    openalex = connect("openalex")["openalex"]
    wire.queue("/works", recorded("openalex/works_filter_title.search_augmenting-llm-chemistry-tools.json"))
    result, items = outcome(openalex, "openalex", "augmenting llm chemistry tools")
    assert result.label == "ok(2)"
    assert items[0].doi == "10.1038/s42256-024-00832-8" and items[0].pmid == "38799228"
    assert items[0].text.startswith("Abstract Large language models")  # rebuilt from the inverted index
    wire.queue("/works/doi:10.1073/pnas.1414271111", recorded("openalex/works_doi_10.1073-pnas.1414271111.json"))
    result, items = outcome(openalex, "openalex", doi="10.1073/pnas.1414271111")
    assert result.label == "ok(1)" and items[0].pmid == "25349395"
    wire.queue("/works/doi:10.9999/not-in-openalex", recorded("openalex/error_404_works_doi_not-in-openalex.html"))
    result, _ = outcome(openalex, "openalex", doi="10.9999/not-in-openalex")
    assert result.kind == "empty"          # the HTML "Not Found" page: OpenAlex has no such work
    wire.queue("/works", recorded("openalex/error_404_works_doi_not-in-openalex.html"))
    result, _ = outcome(openalex, "openalex", "anything")
    assert result.kind == "bad_response"   # the search endpoint itself answering 404 is a broken request


def test_crossref_works_and_recorded_errors(wire, connect):
    crossref = connect("crossref")["crossref"]
    wire.queue("/works", recorded("crossref/works_query-ecology_rows-2.json"))
    result, items = outcome(crossref, "crossref", "ecology")
    assert result.label == "ok(2)" and all(i.doi for i in items)
    wire.queue("/works/10.9999/notarealdoi", recorded("crossref/error_404_works_notarealdoi.txt"))
    assert outcome(crossref, "crossref", doi="10.9999/notarealdoi")[0].kind == "empty"
    wire.queue("/works/10.9999/cursor", recorded("crossref/error_404_works_cursor-invalid.json"))
    result, _ = outcome(crossref, "crossref", doi="10.9999/cursor")
    assert result.kind == "bad_response" and "cursor-invalid" in result.detail
    wire.queue("/works", recorded("crossref/error_400_works_sample-200_validation-failure.json"))
    result, _ = outcome(crossref, "crossref", "x")
    assert result.kind == "bad_response" and "integer-not-valid" in result.detail
    wire.always("/works", recorded("crossref/error_500_works_cursor-5_exception.json"))
    result, _ = outcome(crossref, "crossref", "x")
    assert result.kind == "unavailable" and result.attempts == 3


def test_clinicaltrials_study_lookup_and_list(wire, connect):
    trials = connect("clinicaltrials")["clinicaltrials"]
    wire.queue("/studies/NCT00973089", recorded("clinicaltrials/study_NCT00973089_withdrawn.json"))
    result, (study,) = outcome(trials, "clinicaltrials", nct_id="NCT00973089")
    assert result.label == "ok(1)" and study.retracted and "overallStatus WITHDRAWN" in study.notes
    # No v2 list response was ever recorded: the list wraps recorded study records the way v2 does.
    studies = [json.loads(body(f"clinicaltrials/{name}.json"))
               for name in ("study_NCT05594173_completed_with-results", "study_NCT04207047_unknown-status")]
    wire.queue("/studies", Reply(200, {"studies": studies}))
    result, items = outcome(trials, "clinicaltrials", "dental caries")
    assert result.label == "ok(2)" and [i.external_id for i in items] == ["NCT05594173", "NCT04207047"]
    assert not any(i.retracted for i in items)


@pytest.mark.parametrize(("fixture", "kind"), [
    ("openfda/error_404_drugsfda_no-matches.json", "empty"),
    ("openfda/error_400_drugsfda_sort-invalid-field.json", "bad_response"),
    ("openfda/error_403_drugsfda_api-key-invalid.json", "auth"),
    ("openfda/error_500_drugsfda_lexical-error.json", "unavailable"),
])
def test_openfda_recorded_errors(wire, connect, fixture, kind):
    wire.always("/drug/drugsfda.json", recorded(fixture))
    result, items = outcome(connect("openfda")["openfda"], "openfda", "openfda.generic_name:x", endpoint="drugsfda")
    assert (result.kind, items) == (kind, [])


def test_openfda_label_drugsfda_and_event(wire, connect):
    openfda = connect("openfda")["openfda"]
    wire.queue("/drug/label.json", recorded("openfda/label_search_brand-generic-aspirin_2015.json"))
    wire.queue("/drug/drugsfda.json", recorded("openfda/drugsfda_search_generic-semaglutide_limit-2.json"))
    wire.queue("/drug/event.json", recorded("openfda/event_search_product-ndc-50242-051_seriousnessdeath_2015.json"))
    result, (label,) = outcome(openfda, "openfda", "aspirin")
    assert result.label == "ok(1)" and "Reye" in label.text and label.kind == "label"
    result, apps = outcome(openfda, "openfda", "semaglutide", endpoint="drugsfda")
    assert [a.external_id for a in apps] == ["drugsfda:NDA213051", "drugsfda:NDA215256"]
    result, (event,) = outcome(openfda, "openfda", "x", endpoint="event")
    assert "Nephrogenic systemic fibrosis" in event.text
    apply_licence_guard([label])
    assert label.may_support   # openFDA data is public domain


def test_pmc_not_open_access_is_licence_blocked(wire, connect):
    wire.queue("/oa.fcgi", recorded("pmc/error_oa-fcgi_PMC8550608_idIsNotOpenAccess.xml"))
    result, items = outcome(connect("pmc")["pmc"], "pmc", pmcid="PMC8550608")
    assert result.kind == "licence_blocked" and "idIsNotOpenAccess" in result.detail and items == []
    assert wire.requests_to("/efetch.fcgi") == []


def test_pmc_record_without_an_open_licence_is_context_only(wire, connect):
    wire.queue("/oa.fcgi", recorded("pmc/oa-fcgi_id-PMC7906746_tgz-link.xml"))
    result, (item,) = outcome(connect("pmc")["pmc"], "pmc", pmcid="PMC7906746")
    assert result.label == "ok(1)" and item.licence is None
    apply_licence_guard([item])
    assert not item.may_support and item.licence_reason.startswith("context only")
    assert wire.requests_to("/efetch.fcgi") == []   # no full text is fetched for it


def test_pmc_full_text_of_an_article(wire, connect):
    pmc = connect("pmc")["pmc"]
    wire.queue("/efetch.fcgi", recorded("pmc/efetch_pmc_8435807.xml"))
    (article,) = pmc.fetch(["PMC8435807"])
    assert (article.external_id, article.pmid, article.doi) == ("PMC8435807", "34527728", "10.1183/23120541.50193-2021")
    assert "Creative Commons Attribution Non-Commercial" in article.licence
    assert "article-type correction" in article.notes and not article.retracted
    apply_licence_guard([article])
    assert article.may_support


def test_unparseable_body_is_bad_response(wire, connect):
    wire.queue("/search", Reply(200, "<html>maintenance</html>", {"Content-Type": "text/html"}))
    result, _ = outcome(connect("europepmc")["europepmc"], "europepmc", "x")
    assert result.kind == "bad_response" and "not JSON" in result.detail


def test_dailymed_lists_labels_then_reads_each_spl(wire, connect):
    dailymed = connect("dailymed")["dailymed"]
    spls = json.loads(body("dailymed/spls_published-date-gt-2024-08-17_pagesize-3.json"))
    # The recorded list page names other set ids than the one SPL recorded: point its first entry at it.
    spls["data"] = [{**spls["data"][0], "setid": "1c4ec3cb-b7a4-73c9-e063-6394a90afeda"}]
    wire.queue("/spls.json", Reply(200, spls))
    wire.queue("/spls/1c4ec3cb-b7a4-73c9-e063-6394a90afeda.xml",
               recorded("dailymed/spls_setid_1c4ec3cb-b7a4-73c9-e063-6394a90afeda.xml"))
    result, (label,) = outcome(dailymed, "dailymed", "benzalkonium")
    assert result.label == "ok(1)" and label.title == "71745-003 GoodEarth Sanitizing Wipes"
    assert "Hand sanitizer" in label.text and label.published == "2024" and "SPL version 1" in label.notes
    apply_licence_guard([label])
    assert label.may_support and "curated" in label.licence_reason


def test_medlineplus_connect_feed(wire, connect):
    medlineplus = connect("medlineplus")["medlineplus"]
    wire.queue("/service", recorded("medlineplus/connect_icd9cm-250.33_json_2014.json"))
    result, items = outcome(medlineplus, "medlineplus", "diabetic coma", code="250.33", code_system="icd9cm")
    assert result.label == "ok(2)" and [i.title for i in items] == ["Coma", "Diabetes Type 1"]
    assert "deep state of unconsciousness" in items[0].text and "<p>" not in items[0].text
    assert "mainSearchCriteria.v.cs=2.16.840.1.113883.6.103" in medlineplus.http.sent[0]
    result, _ = outcome(medlineplus, "medlineplus", "no code given")
    assert result.kind == "empty" and len(wire.requests) == 1   # Connect answers codes only: nothing asked


def test_a_429_with_retry_after_through_a_connector_is_retried_then_rate_limited(wire, connect, sleeps):
    # No 429 body was ever recorded for openFDA: the status and header are the ones its docs describe.
    wire.always("/drug/label.json", Reply(429, {"error": {"code": "OVER_RATE_LIMIT"}}, {"Retry-After": "7"}))
    result, items = outcome(connect("openfda", timeout_s=10.0)["openfda"], "openfda", "aspirin")
    assert (result.kind, result.attempts, items) == ("rate_limited", 3, [])
    assert sleeps == [7.0, 7.0] and len(wire.requests_to("/drug/label.json")) == 3
