"""A synthesis claim either repeats a surviving finding's claim text (whitespace aside) or is audited
against its quote by the same checks (issue 35); an abstention the rules cannot back is not support."""

from __future__ import annotations

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.audit import RoundEvidence, SynthesisBasis, audit_reply
from forum_atlas.deliberation.model import SOURCED, ClaimDraft, DraftReply, Passage

SENTENCE = ("RESULTS There was a significantly greater increase in mean morning PEF in non-smokers than in smokers "
            "following inhaled fluticasone (27 l/min v -5 l/min).")     # SciFact 20611846
FINDING = "There was a significantly greater increase in mean morning PEF in non-smokers than in smokers"
PASSAGE = Passage("S1", 7, 1, 1, "Smoking and asthma", SENTENCE, "scifact")
EVIDENCE = RoundEvidence({"S1": PASSAGE})
BASIS = SynthesisBasis(citations=frozenset({(7, SENTENCE)}), findings=frozenset({(7, SENTENCE, FINDING)}))
CALL = CallRecord(stage="synthesis", provider="test", version="1", input_digest="0" * 64)


def _audit(text: str, basis: SynthesisBasis | None = BASIS):
    reply = DraftReply(claims=[ClaimDraft(text, SOURCED, "S1", SENTENCE)], call=CALL)
    return audit_reply("synthesis", 1, reply, EVIDENCE, {(7, SENTENCE): True}, {}, basis).claims[0]


def test_a_synthesis_claim_repeating_a_finding_keeps_the_tag():
    assert _audit(FINDING.replace(" in ", "  in\n ")).tag == SOURCED


def test_a_reworded_synthesis_claim_is_audited_like_a_finding():
    reversed_ = "There was a significantly greater increase in mean morning PEF in smokers than in non-smokers"
    claim = _audit(reversed_)
    assert claim.tag != SOURCED and claim.failed == "comparison_reversed"
    assert _audit(FINDING + " following inhaled fluticasone").tag == SOURCED   # faithful, and audited


def test_an_abstention_the_rules_cannot_back_is_not_verifiable():
    claim = _audit("An increase in PEF.", basis=None)     # one content word aligned: too little to vouch for
    assert claim.tag != SOURCED and claim.failed == "not_verifiable"
