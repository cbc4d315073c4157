"""The retraction gate over real records: Crossref `updated-by` (served over HTTP), Retraction Watch
data and a withdrawn trial are excluded with a reason; a correction or an expression of concern is
not; an unverifiable DOI is excluded (fail closed)."""

from __future__ import annotations

from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery
from forum_atlas.evidence.retraction import RetractionWatchIndex, gate
from tests.atlas.evidence.replay import body, crossref_message, recorded

DERIVED = "crossref/derived_pruned/cachewrapped_works_{}.json"


def item(doi: str | None = None, pmid: str | None = None, **kw) -> EvidenceItem:
    return EvidenceItem(source=kw.pop("source", "pubmed"), external_id=doi or pmid or "x", title="t", text="x",
                        doi=doi, pmid=pmid, **kw)


def rw_index() -> RetractionWatchIndex:
    return RetractionWatchIndex.from_csv(body("retractionwatch/stub_retractions_first20.csv").decode("utf-8"))


def test_crossref_retractions_are_excluded_and_the_correction_is_not(wire, connect):
    crossref = connect("crossref")["crossref"]
    for doi, name in [("10.1016/s0140-6736(97)11096-0", "10.1016_s0140-6736-97-11096-0"),
                      ("10.1056/nejmoa2007621", "10.1056_nejmoa2007621"),
                      ("10.1016/j.ejogrb.2014.02.038", "10.1016_j.ejogrb.2014.02.038"),
                      ("10.1038/s41586-020-2649-2", "10.1038_s41586-020-2649-2")]:
        wire.queue(f"/works/{doi}", crossref_message(DERIVED.format(name)))
    wire.queue("/works/10.1371/journal.pone.0033693", recorded("crossref/works_doi_10.1371-journal.pone.0033693.json"))
    items = [item("10.1016/s0140-6736(97)11096-0"), item("10.1056/nejmoa2007621"), item("10.1016/j.ejogrb.2014.02.038"),
             item("10.1038/s41586-020-2649-2"), item("10.1371/journal.pone.0033693")]
    result = gate(items, crossref=crossref.work, retraction_watch=rw_index())
    assert {i.doi for i in result.excluded} == {"10.1016/s0140-6736(97)11096-0", "10.1056/nejmoa2007621"}
    reasons = result.exclusions()
    assert "retraction" in reasons["doi:10.1016/s0140-6736(97)11096-0"]
    assert "10.1016/s0140-6736(10)60175-4" in reasons["doi:10.1016/s0140-6736(97)11096-0"]   # the notice
    admitted = {i.doi: i for i in result.admitted}
    assert set(admitted) == {"10.1016/j.ejogrb.2014.02.038", "10.1038/s41586-020-2649-2",
                             "10.1371/journal.pone.0033693"}
    assert any("expression_of_concern" in n for n in admitted["10.1016/j.ejogrb.2014.02.038"].notes)


def test_retraction_known_only_from_retraction_watch(wire, connect):
    """The Crossref body (select=DOI,author,…) has no updated-by; the RW data row 56362 retracts it."""
    crossref = connect("crossref")["crossref"]
    wire.queue("/works", recorded("crossref/works_query.title_retracted-10.1155-2022-8341966_select.json"))
    found = crossref.search(EvidenceQuery("The Dilemma and Countermeasures of Music Education", 1))
    assert [i.doi for i in found] == ["10.1155/2022/8341966"] and not found[0].retracted
    result = gate(found, crossref=crossref.work, retraction_watch=rw_index())
    assert result.admitted == []
    assert "Retraction Watch record 56362" in result.excluded[0].excluded_reason
    assert wire.requests_to("/works/10.1155/2022/8341966") == []   # RW decided; no further look-up needed


def test_retraction_watch_matches_by_pmid_too():
    result = gate([item(pmid="36035816", source="europepmc")], crossref=None, retraction_watch=rw_index())
    assert "Retraction Watch record 56416" in result.excluded[0].excluded_reason


def test_withdrawn_trial_is_excluded(wire, connect):
    trials = connect("clinicaltrials")["clinicaltrials"]
    wire.queue("/studies/NCT00973089", recorded("clinicaltrials/study_NCT00973089_withdrawn.json"))
    found = trials.search(EvidenceQuery("", 1, {"nct_id": "NCT00973089"}))
    result = gate(found, crossref=None, retraction_watch=None)
    assert result.admitted == [] and "WITHDRAWN" in result.exclusions()["clinicaltrials:NCT00973089"]


def test_a_doi_that_cannot_be_checked_is_excluded(wire, connect):
    crossref = connect("crossref", attempts=1)["crossref"]
    wire.queue("/works/10.1038/s41586-020-2649-2", recorded("crossref/error_500_works_cursor-5_exception.json"))
    result = gate([item("10.1038/s41586-020-2649-2")], crossref=crossref.work, retraction_watch=None)
    assert result.admitted == []
    assert result.excluded[0].excluded_reason.startswith("retraction status unknown (Crossref unavailable")


def test_a_doi_unknown_to_crossref_is_admitted_with_a_note(wire, connect):
    crossref = connect("crossref")["crossref"]
    wire.queue("/works/10.48550/arxiv.2304.05376", recorded("crossref/error_404_works_notarealdoi.txt"))
    result = gate([item("10.48550/arxiv.2304.05376")], crossref=crossref.work, retraction_watch=rw_index())
    assert len(result.admitted) == 1 and "Crossref has no record" in result.admitted[0].notes[-1]


def test_the_same_doi_is_looked_up_once(wire, connect):
    crossref = connect("crossref")["crossref"]
    wire.always("/works/10.1038/s41586-020-2649-2", crossref_message(DERIVED.format("10.1038_s41586-020-2649-2")))
    gate([item("10.1038/s41586-020-2649-2"), item("10.1038/s41586-020-2649-2", source="openalex")],
         crossref=crossref.work, retraction_watch=None)
    assert len(wire.requests_to("/works/10.1038/s41586-020-2649-2")) == 1


def test_no_crossref_check_configured_fails_closed():
    assert gate([item("10.1/x")], crossref=None, retraction_watch=None).admitted == []
