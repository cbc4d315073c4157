"""The rule-based support verifier: precise where it commits, abstains when unsure (DEL-8, EVB-4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support_eval import DATA, evaluate, load_pairs, score, stress_pairs, wilson_low
from forum_atlas.entailment.base import SupportQuery
from forum_atlas.entailment.rules import RuleBasedSupportVerifier

V = RuleBasedSupportVerifier()


def verdict(claim: str, quote: str, passage: str = "") -> str:
    return V.explain(claim, quote, passage or quote).verdict


def test_identity():
    assert (V.name, V.version) == ("rule-based-support", "v1")


@pytest.mark.parametrize("claim, quote", [
    # the claim is the quote, or a span of it
    ("LDL cholesterol has a causal role in the development of cardiovascular disease.",
     "BACKGROUND LDL cholesterol has a causal role in the development of cardiovascular disease."),
    ("Deletion of integrin αvβ8 did not result in a spontaneous inflammatory phenotype",
     ("Treg-cell-specific deletion of integrin αvβ8 did not result in a spontaneous inflammatory phenotype, "
      "suggesting that this pathway is not important.")),
    # every content word carried, same direction, same order
    ("Aspirin use reduced the risk of colorectal cancer.",
     "Regular aspirin use reduced the risk of colorectal cancer by 20% in the cohort."),
    ("Unemployment rose to 4.2 percent in March.", "Unemployment rose to 4.2 percent in March, the BLS said."),
    ("Neutrophil extracellular traps (NETs) are released by ANCA-stimulated neutrophils.",
     ("Here we show that chromatin fibers, so-called neutrophil extracellular traps (NETs), are released by "
      "ANCA-stimulated neutrophils and contain the targeted autoantigens.")),
    # both negated the same way
    ("The tariff did not raise consumer prices.", "Overall, the tariff did not raise consumer prices in 2019."),
])
def test_supports(claim, quote):
    assert verdict(claim, quote) == "supports", V.explain(claim, quote, quote).reason


@pytest.mark.parametrize("claim, quote", [
    # antonym on the same word
    ("Pyridostatin decreases telomere fragility in BRCA2-deficient cells.",
     "Treatment with pyridostatin (PDS) increases telomere fragility in BRCA2-deficient cells."),
    ("Birth weight is negatively associated with breast cancer.",
     "Birth weight was positively associated with breast cancer risk in studies based on birth records."),
    ("Radioiodine treatment increases thyroid volume.",
     "In 45 patients, radioiodine treatment reduced thyroid volume by half within two years."),
    # the quote negates the claim's direction
    ("Use of ADHD medications increases the risk of serious cardiovascular events.",
     "Use of ADHD medications was not associated with an increased risk of serious cardiovascular events."),
    ("The subsidy reduced emissions.", "The subsidy did not reduce emissions."),
    # the claim is negated, the quote is not
    ("Physical activity does not improve cognitive function in older adults.",
     "Physical activity improved cognitive function in older adults."),
    # the quote negates a claim without direction words
    ("The vaccine is effective against the variant.", "The vaccine is not effective against the variant."),
])
def test_contradicts(claim, quote):
    assert verdict(claim, quote) == "contradicts", V.explain(claim, quote, quote).reason


@pytest.mark.parametrize("claim, quote", [
    # numbers differ
    ("One in two surgical randomized controlled trials are discontinued early.",
     "One in five surgical randomised controlled trials are discontinued early."),
    ("Unemployment rose to 4.5 percent in March.", "In March, unemployment rose to 4.2 percent."),
    # roles swapped
    ("Protein A inhibits protein B.", "Protein B inhibits protein A."),
    # word order differs: a recall cost the rule accepts in order to refuse role swaps
    ("Unemployment rose to 4.2 percent in March.", "In March, unemployment rose to 4.2 percent."),
    # the quote only asks, hypothesises or hedges
    ("Statins reduce dementia risk.", "We investigated whether statins reduce dementia risk."),
    ("Statins reduce dementia risk.", "Statins may reduce dementia risk."),
    # a negation before the matched words ("no evidence that …")
    ("Coffee increases mortality.", "There was no evidence in this large cohort that coffee increases mortality."),
    # both directions on the same word
    ("Consumption of whole fruits increases the risk of type 2 diabetes.",
     ("Greater consumption of whole fruits is associated with a lower risk of type 2 diabetes, whereas greater "
      "consumption of fruit juice is associated with a higher risk.")),
    # a weak negation in the matched region ("without")
    ("Migraine is associated with stroke.", "Migraine without aura was associated with stroke in few cohorts."),
    # a passive antonym on the other side of the word: not read as a clash, not as support either
    ("Radioiodine treatment increases thyroid volume.", "The median thyroid volume was reduced after treatment."),
    # a paraphrase a rule cannot read
    ("Hypocretin neurones induce a panic-prone state in rats.",
     ("Activation of ORX-synthesizing neurons is necessary for developing a panic-prone state in the rat panic "
      "model, and ORX-1 receptor antagonists block the panic responses.")),
])
def test_never_supports_when_it_cannot_tell(claim, quote):
    assert verdict(claim, quote) != "supports"


@pytest.mark.parametrize("claim, quote", [
    ("One in two surgical randomized controlled trials are discontinued early.",
     "One in five surgical randomised controlled trials are discontinued early."),
    ("Protein A inhibits protein B.", "Protein B inhibits protein A."),
    ("Statins reduce dementia risk.", "We investigated whether statins reduce dementia risk."),
    ("Coffee increases mortality.", "There was no evidence in this large cohort that coffee increases mortality."),
    ("Migraine is associated with stroke.", "Migraine without aura was associated with stroke in few cohorts."),
])
def test_unclear_cases_abstain_rather_than_guess(claim, quote):
    assert verdict(claim, quote) == "abstain"


def test_contextual_when_the_passage_does_not_state_the_claim():
    passage = ("The central bank publishes its minutes three weeks after each meeting. Members discussed the "
               "labour market and wage growth at length.")
    claim = "The central bank will cut interest rates in June because inflation has fallen below target."
    assert verdict(claim, "Members discussed the labour market and wage growth at length.", passage) == "contextual"
    # an unrelated passage does not state the claim either
    assert verdict(claim, "The river flooded twice in spring.", "The river flooded twice in spring.") == "contextual"


def test_too_little_to_judge_abstains():
    assert verdict("Yes.", "Yes, it did.") == "abstain"
    assert V.explain("Rates rose sharply.", "", "").verdict == "abstain"


def test_judge_is_batch_shaped_deterministic_and_makes_no_calls():
    queries = [SupportQuery("The subsidy reduced emissions.", "The subsidy did not reduce emissions.", "p"),
               SupportQuery("Aspirin use reduced the risk of colorectal cancer.",
                            "Regular aspirin use reduced the risk of colorectal cancer.", "p"),
               SupportQuery("Yes.", "Yes.", "p")]
    first = V.judge(queries)
    assert first.verdicts == ["contradicts", "supports", "abstain"] and first.calls == []
    assert V.judge(queries).verdicts == first.verdicts
    assert V.judge([]).verdicts == []


def test_explain_says_why():
    decision = V.explain("Unemployment rose to 4.5 percent in March.", "In March, unemployment rose to 4.2 percent.")
    assert decision.verdict == "abstain" and "4.5" in decision.reason


# --- the benchmark harness (bench.support_eval) -----------------------------------------------------

def test_score_counts_and_direction_precision():
    golds = ["SUPPORT", "SUPPORT", "CONTRADICT", "CONTRADICT", "NEI", "NEI"]
    verdicts = ["supports", "abstain", "supports", "contradicts", "supports", "contextual"]
    result = score(golds, verdicts)
    assert result["confusion"]["CONTRADICT"]["supports"] == 1
    assert result["per_label"]["SUPPORT"]["precision"] == pytest.approx(1 / 3)  # one of three supports is right
    assert result["per_label"]["SUPPORT"]["recall"] == pytest.approx(1 / 2)
    assert result["direction_precision_where_committed"] == pytest.approx(2 / 3)  # NEI pairs left out
    assert result["commit_precision_all_pairs"] == pytest.approx(2 / 4)          # NEI counted as an error
    assert result["abstention_rate"] == pytest.approx(1 / 6)
    assert wilson_low(8, 8) == pytest.approx(0.676, abs=0.001)


def _mini_scifact(tmp_path: Path) -> Path:
    corpus = [
        {"doc_id": 1, "title": "t1", "abstract": ["Aspirin use reduced the risk of colorectal cancer.",
                                                  "The cohort was followed for ten years."], "structured": False},
        {"doc_id": 2, "title": "t2", "abstract": ["Pyridostatin increases telomere fragility.",
                                                  "Mice were used."], "structured": False},
        {"doc_id": 3, "title": "t3", "abstract": ["The river flooded in spring.", "Boats were moved."],
         "structured": False},
    ]
    claims = [
        {"id": 1, "claim": "Aspirin use reduced the risk of colorectal cancer.",
         "evidence": {"1": [{"sentences": [0], "label": "SUPPORT"}]}, "cited_doc_ids": [1, 3]},
        {"id": 2, "claim": "Pyridostatin decreases telomere fragility.",
         "evidence": {"2": [{"sentences": [0], "label": "CONTRADICT"}]}, "cited_doc_ids": [2]},
    ]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    (tmp_path / "claims_dev.jsonl").write_text("\n".join(json.dumps(c) for c in claims) + "\n")
    return tmp_path


def test_evaluate_on_a_small_scifact_shaped_folder(tmp_path):
    data = _mini_scifact(tmp_path)
    pairs = load_pairs(data, "dev")
    assert [(p.claim_id, p.doc_id, p.gold) for p in pairs] == [(1, 1, "SUPPORT"), (1, 3, "NEI"), (2, 2, "CONTRADICT")]
    assert pairs[0].quote == "Aspirin use reduced the risk of colorectal cancer."
    assert pairs[0].passage.endswith("ten years.")
    result = evaluate(V, data)
    assert result["confusion"]["SUPPORT"]["supports"] == 1
    assert result["confusion"]["CONTRADICT"]["contradicts"] == 1
    assert result["confusion"]["NEI"]["contextual"] == 1
    assert result["direction_precision_where_committed"] == 1.0
    verbatim, perturbed = stress_pairs(data, "dev")
    assert len(verbatim) == 2
    assert [p.claim for p in perturbed] == ["Aspirin use increased the risk of colorectal cancer.",
                                            "Pyridostatin decreases telomere fragility."]
    assert result["stress"]["perturbed"]["false_supports"] == 0


@pytest.mark.skipif(not (DATA / "claims_dev.jsonl").exists(), reason="SciFact data not present")
def test_scifact_dev_direction_precision_where_it_commits():
    """A regression guard on the real dev split: no wrong direction where it commits, never a
    'supports' on a perturbed (made-false) sentence."""
    result = evaluate(V)
    assert result["direction_commits"] >= 5
    assert result["direction_precision_where_committed"] >= 0.98
    assert result["supports_on_nei"] == 0
    assert result["stress"]["perturbed"]["false_supports"] == 0
    assert result["stress"]["verbatim"]["supports_rate"] >= 0.99
