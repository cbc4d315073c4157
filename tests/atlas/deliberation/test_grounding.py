"""What "supports" means (issue 22, DEL-3): checks (a)–(d) on plain strings, and on real SciFact
sentences that a claim copied from its own sentence is never refused."""

from __future__ import annotations

import json

import pytest

from forum_atlas.deliberation.grounding import MIN_QUOTE_WORDS, contexts_of, ground, informative_words
from forum_atlas.text import sentence_spans

PASSAGE = ("Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65. "
           "The trial enrolled 3,000 participants, followed for five years. "
           "The association did not appear to be confounded by age or sex in this cohort. "
           "Exercise lowered blood pressure and raised HDL cholesterol in the same cohort. "
           "Smoking may promote plaque growth in the coronary arteries of BRCA1 carriers.")
MODELS = ("Drug X reduced tumour growth in mice. Drug Y is unlikely to cause liver damage in adults. "
          "Statin therapy probably lowers stroke risk.")
TRIAL = "Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65."


@pytest.mark.parametrize(("claim", "quote"), [
    (TRIAL, TRIAL),
    (TRIAL, "Vitamin D  supplementation reduced\nhip fractures"),                 # a fragment, read in its sentence
    ("Vitamin D supplementation lowered hip fractures by 20% in adults over 65.", TRIAL),  # same direction, "%"
    ("The study found that the trial enrolled 3,000 participants.", "The trial enrolled 3,000 participants"),
    ("The trial enrolled 3000 people.", "The trial enrolled 3,000 participants"),  # a stated synonym, digits
    ("Smoking may promote plaque growth in BRCA1 carriers.", "Smoking may promote plaque growth in the coronary"),
    ("The association did not appear to be confounded by age.", "appear to be confounded by age or sex in this"),
])
def test_grounded_claims_keep_the_tag(claim, quote):
    assert ground(claim, quote, PASSAGE).failed is None


REFUSED = [
    # (a) a quote too small to carry a claim
    ("Vitamin D prevents every fracture.", "in adults", "quote_uninformative", ""),
    ("Vitamin D prevents every fracture.", ".", "quote_uninformative", ""),
    ("Vitamin D reduced hip fractures.", "reduced hip fractures", "quote_uninformative", "3 content words"),
    # (b) the claim says more than the quote's sentence
    (TRIAL[:-1] + ", an effect confirmed in 100 % of human patients.", TRIAL, "claim_not_covered", "100"),
    ("Vitamin D supplementation reduced hip fractures by 40 percent in adults over 65.", TRIAL,
     "claim_not_covered", "40"),
    ("Vitamin D supplementation always reduced hip fractures in adults.", TRIAL, "quantifier_changed", "always"),
    ("Smoking promotes plaque growth in BRCA2 carriers.", "Smoking may promote plaque growth in the coronary",
     "claim_not_covered", "BRCA2"),
    ("Smoking promotes plaque growth in the coronary arteries.", "Smoking may promote plaque growth in the coronary",
     "modality_dropped", "may"),
    ("Smoking protects coronary arteries against plaque build-up.", "Smoking may promote plaque growth in the coronary",
     "claim_not_covered", "against"),
    ("Drug X reduced tumour growth.", "Drug X reduced tumour growth", MODELS, "claim_not_covered", "mice"),
    ("Statin therapy lowers stroke risk.", "Statin therapy probably lowers stroke risk", MODELS,
     "modality_dropped", "probably"),
    # (c) reversed directions, every one counted
    ("Vitamin D supplementation increased hip fractures by 20 percent in adults over 65.", TRIAL,
     "direction_clash", "1 direction clash"),
    ("Exercise raised blood pressure and lowered HDL cholesterol in the same cohort.",
     "Exercise lowered blood pressure and raised HDL cholesterol", "direction_clash", "2 direction clashes"),
    # (d) the negation just before the quote is read
    ("The association appeared to be confounded by age or sex.", "appear to be confounded by age or sex in this",
     "negation_clash", "1 governing"),
    ("Vitamin D supplementation did not reduce hip fractures in adults over 65.", TRIAL, "negation_clash", ""),
    ("Drug Y causes liver damage in adults.", "cause liver damage in adults.", MODELS, "negation_clash", ""),
    ("Vitamin D reduces fracture risk in women.", "vitamin D reduces fracture risk in women",   # a negation far back
     "None of the twelve trials that enrolled older adults between 2001 and 2010 found that vitamin D reduces "
     "fracture risk in women.", "negation_clash", ""),
]


@pytest.mark.parametrize(("claim", "quote", "passage", "failed", "words"),
                         [case if len(case) == 5 else (*case[:2], PASSAGE, *case[2:]) for case in REFUSED])
def test_each_check_names_what_failed(claim, quote, passage, failed, words):
    result = ground(claim, quote, passage)
    assert result.failed == failed and words in result.detail


def test_inflections_and_look_alike_negations():
    quote = "unlikely to cause liver damage in adults"
    assert ground("Drug Y is unlikely to cause liver damage in adults.", quote, MODELS).failed is None
    assert ground("Drug Y is unlikely to causes liver damage in adults.", quote, MODELS).failed is None


def test_the_minimum_quote_is_counted_in_content_words():
    assert informative_words("in the") == 0 and informative_words("the trial enrolled 3,000") == 3
    assert informative_words("reduced hip fractures by 20 percent") == 5   # direction words and numbers count
    assert ground("Hip fractures fell by 20 percent.", "hip fractures by 20", PASSAGE).failed == "quote_uninformative"
    assert MIN_QUOTE_WORDS == 4


def test_a_quote_found_twice_is_read_in_each_of_its_sentences():
    passage = "Drug A did not lower systolic blood pressure in men. Drug A did lower systolic blood pressure in women."
    quote = "lower systolic blood pressure in"
    assert [c for c, _ in contexts_of(quote, passage)] == [
        "Drug A did not lower systolic blood pressure in men.", "Drug A did lower systolic blood pressure in women."]
    assert ground("Drug A lowered systolic blood pressure in women.", quote, passage).failed is None
    assert ground("Drug A lowered systolic blood pressure in men.", quote, passage).failed == "negation_clash"


def test_a_claim_copied_from_its_sentence_is_never_refused(shared_data):
    """Every sentence of 100 SciFact abstracts (with enough content words), cited for itself."""
    refused = []
    with (shared_data / "scifact" / "beir" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line, _ in zip(handle, range(100)):
            text = json.loads(line)["text"]
            for start, end in sentence_spans(text):
                sentence = text[start:end]
                if informative_words(sentence) >= MIN_QUOTE_WORDS:
                    result = ground(sentence, sentence, text)
                    if result.failed:
                        refused.append((sentence[:80], result.failed, result.detail))
    assert refused == []
