"""bench.audit_attacks part 4 runs its pairs through the deliberation's real audit task on a real database:
results line up with the pairs, a quote that is not in the passage is refused by the database's verbatim
rule, the synthesis may cite the round's surviving finding, and the abstaining verifier is really asked."""

from __future__ import annotations

import os
from dataclasses import replace
from unittest.mock import patch

from bench.attack_generation import ROLES, SYNTHESIS, WHOLE, Edit, Pair, Sentence
from bench.audit_attacks import audit_classes, audit_round, audit_synthesis, class_evidence
from tests.support.hostile_model import CHAT, AbstainingVerifier

TEXT = "Cold acclimation markedly reduced plasma levels of adiponectin in adult mice."
SENTENCE = Sentence(7, 1, TEXT, "Adiponectin and cold", "Mice were kept at 4 C for a week. " + TEXT)
WHOLE_PAIR = Pair(WHOLE, "the sentence itself", True, TEXT, TEXT, SENTENCE, Edit("same"), True)
SWAPPED = "Plasma levels of adiponectin markedly reduced cold acclimation in adult mice."
ATTACK = Pair(ROLES, "subject and object exchanged", False, SWAPPED, TEXT, SENTENCE,
              Edit("swap", "Cold acclimation", "plasma levels of adiponectin"), True)
NOT_VERBATIM = replace(ATTACK, quote=TEXT.replace("markedly", "strongly"))


def test_the_pairs_go_through_the_audit_task_in_order(settings):
    evidence, label_of = class_evidence(settings, [WHOLE_PAIR, ATTACK])
    assert label_of == {7: "S1"} and TEXT in evidence.passages["S1"].text
    claims = audit_round(settings, evidence, label_of, [WHOLE_PAIR, NOT_VERBATIM, ATTACK])
    assert [c.text for c in claims] == [TEXT, SWAPPED, SWAPPED]
    assert claims[0].tag == "SOURCED"
    assert (claims[1].tag, claims[1].failed) == ("INFERRED", "quote_not_verbatim")

    judged, kept = audit_synthesis(settings, evidence, label_of, [replace(WHOLE_PAIR, kind=SYNTHESIS)])
    assert kept == 1 and judged[0].tag == "SOURCED"   # the synthesis repeats the finding it cites


def test_the_abstaining_verifier_is_asked(settings):
    evidence, label_of = class_evidence(settings, [WHOLE_PAIR])
    with AbstainingVerifier() as verifier, patch.dict(os.environ, {"OPENAI_API_KEY": "sk-test-not-a-secret"}):
        abstaining = replace(settings, llm="offline", support_verifier="openai", support_model="abstains",
                             support_base_url=verifier.base_url)
        claims = audit_round(abstaining, evidence, label_of, [WHOLE_PAIR])
        assert verifier.server.requests_to(CHAT)
    assert claims[0].verdict == "abstain"


def test_every_class_is_audited_with_both_verifiers(settings):
    pairs = {WHOLE: [WHOLE_PAIR], ROLES: [ATTACK], SYNTHESIS: [replace(ATTACK, kind=SYNTHESIS)]}
    result = audit_classes(settings, pairs)
    rows = result["classes"]
    assert set(rows) == {WHOLE, ROLES, SYNTHESIS}
    for row in rows.values():
        assert len(row["rules"]) == len(row["abstains"]) == len(row["pairs"]) == 1
    assert rows[WHOLE]["rules"][0].tag == rows[WHOLE]["abstains"][0].tag == "SOURCED"
    assert rows[SYNTHESIS]["findings_kept"] == 1
    assert rows[WHOLE]["abstains"][0].verdict == "abstain"
