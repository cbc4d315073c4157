"""Pure logic: de-identification of outbound queries, the licence guard, de-duplication and ranking,
and the registry's zero-cost validator."""

from __future__ import annotations

import dataclasses

import pytest

from forum_atlas.evidence.licence import judge
from forum_atlas.evidence.model import EvidenceItem
from forum_atlas.evidence.outbound import deidentify_query
from forum_atlas.evidence.ranker import deduplicate, rank
from forum_atlas.evidence.registry import SPECS, RegistryError, build_connectors, validate_sources


def item(source="pubmed", external_id="1", title="t", text="x", **kw) -> EvidenceItem:
    return EvidenceItem(source=source, external_id=external_id, title=title, text=text, **kw)


@pytest.mark.parametrize(("text", "names", "gone", "kept"), [
    ("DOB: 14/03/1961 aspirin", [], "14/03/1961", "aspirin"),
    ("born on March 14, 1961, statins", [], "March 14, 1961", "statins"),
    ("date of birth 1961-03-14; trial NCT00973089", [], "1961-03-14", "NCT00973089"),
    ("Mr John Smith-Jones asks about smith fractures", ["John Smith-Jones"], "John", "fractures"),
    ("email a.b@c.org re 10.1056/NEJMoa2034577", [], "a.b@c.org", "10.1056/NEJMoa2034577"),
])
def test_deidentify_query_removes_and_keeps(text, names, gone, kept):
    outbound = deidentify_query(text, names=names)
    assert gone not in outbound.text and kept in outbound.text


def test_deidentify_report_counts_kinds_and_keeps_no_value():
    outbound = deidentify_query("Jane Doe, MRN 4482913, DOB 1/2/1960", names=["Jane Doe"])
    assert outbound.report() == {"id_number": 1, "date_of_birth": 1, "name": 1}
    assert all("4482913" not in r.digest and len(r.digest) == 64 for r in outbound.removed)


def test_years_and_publication_dates_are_not_dates_of_birth():
    assert deidentify_query("trials published 2019-03-14 onwards since 2019").text == \
        "trials published 2019-03-14 onwards since 2019"


@pytest.mark.parametrize(("kw", "may", "why"), [
    ({"licence": "https://creativecommons.org/licenses/by/4.0/"}, True, "open licence"),
    ({"licence": "cc-by", "source": "openalex"}, True, "open licence"),
    ({"licence": "PubMed abstract (NLM terms of use)", "source": "pubmed"}, True, "licensed abstract"),
    ({"licence": None, "source": "openalex"}, False, "states no licence"),
    ({"licence": "other-oa", "source": "openalex"}, False, "not an open licence"),
    ({"licence": "https://creativecommons.org/licenses/by/4.0/", "text": " "}, False, "no text"),
    ({"licence": "PubMed abstract (NLM terms of use)", "source": "crossref"}, False, "not an open licence"),
])
def test_licence_guard(kw, may, why):
    allowed, reason = judge(item(**kw))
    assert allowed is may and why in reason


def test_duplicates_merge_by_doi_and_pmid_keeping_the_richest_copy_and_any_retraction_flag():
    a = item("pubmed", "pmid:1", text="short", doi="10.1/a", pmid="1")
    b = item("europepmc", "MED:1", text="a much longer abstract", pmid="1")
    c = item("openalex", "W1", text="mid text", doi="10.1/a", retracted=True)
    d = item("crossref", "doi:10.1/b", doi="10.1/b")
    merged = deduplicate([a, b, c, d])
    assert len(merged) == 2
    best = next(m for m in merged if m.doi == "10.1/a")
    assert best.source == "europepmc" and best.pmid == "1" and best.retracted
    assert {"also in pubmed as pmid:1", "also in openalex as W1 (marked retracted there)"} <= set(best.notes)


def test_rank_is_deterministic_and_prefers_title_matches():
    items = [item(external_id="b", title="cancer", text="metformin"), item(external_id="a", title="metformin cancer"),
             item(external_id="c", title="unrelated")]
    order = [i.external_id for _, i in rank("Does metformin reduce cancer?", items)]
    assert order == ["a", "b", "c"]
    assert order == [i.external_id for _, i in rank("Does metformin reduce cancer?", list(reversed(items)))]


def test_registry_refuses_a_source_that_is_not_zero_cost():
    paid = dataclasses.replace(SPECS["pubmed"], name="paid-index", cost="subscription")
    with pytest.raises(RegistryError, match="only zero-cost sources.*paid-index"):
        validate_sources([SPECS["openalex"], paid])
    with pytest.raises(RegistryError, match="only zero-cost"):
        build_connectors(["paid-index"], specs={"paid-index": paid})
    with pytest.raises(RegistryError, match="unknown evidence source"):
        build_connectors(["scopus"])


def test_every_registered_source_documents_its_rate_limit():
    assert all(spec.cost == "zero" and spec.rate_per_s > 0 and spec.rate_doc for spec in SPECS.values())


def test_the_cli_and_the_flow_offer_exactly_the_registered_sources():
    from typing import get_args

    from forum_atlas.cli.commands.evidence import SOURCES
    from forum_atlas.tasks.evidence import Source

    assert set(SOURCES) == set(get_args(Source)) == set(SPECS)
