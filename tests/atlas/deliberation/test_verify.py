"""Verifying a stored brief, in plain Python: which rules sealed it, and what its rows say against the audit
log (the database side, tampering included, is tests/store/test_briefs.py)."""

from forum_atlas.deliberation.quotes import SUBSTRING_V1, VERBATIM_RULE, WHOLE_WORDS_V2
from forum_atlas.deliberation.verify import (
    BRIEF_PERSISTED,
    StoredBrief,
    sealing_grounding,
    sealing_rule,
    verify_report,
)
from forum_atlas.integrity import brief_row_digests, canonical_json, part_digests, seal

SNAPSHOT = {"passages": [{"chunk_id": 7, "label": "S1"}], "question": "What was approved?"}
PASSAGE = "Ofgem approved the cap-and-floor regime in 2024."


def _stored(*, quote="approved the cap-and-floor regime", engines=None, canonical=None) -> StoredBrief:
    engines = {"audit": f"{WHOLE_WORDS_V2} grounding-v2"} if engines is None else engines
    text = canonical_json(SNAPSHOT)
    brief_row, sections, claims, calls = ["What was approved?", 0, False, 0, None, {}, engines, {}], [], [], []
    cited = [(0, 0, 7, quote)]
    event = {"event_id": 1, "kind": BRIEF_PERSISTED, "payload": {
        "snapshot_id": 3, "seal": seal(text), "part_digests": part_digests(SNAPSHOT),
        "row_digests": brief_row_digests(brief_row, sections, claims, cited, calls)}}
    citation = {"citation_id": 9, "chunk_id": 7, "quote": quote, "section_ordinal": 0, "ordinal": 0, "body": PASSAGE,
                "verbatim": quote in PASSAGE, "verbatim_v1": quote in PASSAGE}
    return StoredBrief(brief_id=5, brief={"snapshot_id": 3, "engines": engines},
                       snapshot={"canonical": canonical or text, "seal": seal(text), "part_digests": part_digests(SNAPSHOT)},
                       events=[event], citations=[citation], around=[], brief_row=brief_row, section_rows=sections,
                       claim_rows=claims, call_rows=calls)


def test_the_sealing_rules_are_read_from_the_sealed_engines():
    assert sealing_rule({"audit": f"{WHOLE_WORDS_V2} grounding-v2"}) == WHOLE_WORDS_V2 == VERBATIM_RULE
    assert sealing_rule({}) == sealing_rule({"audit": "rules-v0"}) == SUBSTRING_V1
    assert sealing_grounding({"audit": f"{WHOLE_WORDS_V2} grounding-v2"}) == "grounding-v2"
    assert sealing_grounding({}) == ""


def test_an_intact_brief_verifies():
    report = verify_report(_stored())
    assert (report.problems, report.rule, report.notes, report.grounding) == ([], WHOLE_WORDS_V2, [], "grounding-v2")


def test_a_changed_snapshot_part_and_a_quote_no_longer_in_its_passage_are_named():
    tampered = canonical_json(SNAPSHOT).replace("approved", "rejected")
    problems = verify_report(_stored(canonical=tampered)).problems
    assert "evidence snapshot 3: its canonical text no longer matches its stored seal" in problems
    assert "evidence snapshot 3: part 'question': the part's content differs from its recorded digest" in problems
    moved = verify_report(_stored(quote="approved the regime")).problems
    assert moved == ["citation 9: its quote no longer occurs verbatim in chunk 7 (whole-words-v2)"]
