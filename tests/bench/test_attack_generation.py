"""The attack generator of issue 35 (bench.attack_generation) on the real SciFact corpus: every class
yields its pairs, every attack is a checked change of meaning with a verbatim quote and, where its
class says so, only the quote's words; every control is faithful by construction. The checks are
shown to reject what they must reject."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.attack_generation import (
    ATTACK_CLASSES,
    CAUSAL,
    COMPARISON,
    CONTROL_CLASSES,
    COORDINATION,
    DELETION,
    HEDGE,
    MODALITY,
    NUMBERS,
    PASSIVE,
    POLARITY,
    QUANTIFIER,
    ROLES,
    SPLICED,
    SYNTHESIS,
    UNITS,
    WHOLE,
    Edit,
    Pair,
    Sentence,
    causal_from_associational,
    clauses_spliced,
    comparison_reversed,
    faithful,
    faithful_deletion,
    faithful_passive,
    generate,
    load_sentences,
    meaning_changed,
    modality_dropped,
    numbers_rebound,
    polarity_inverted,
    quantifier_changed,
    reordered_coordination,
    roles_swapped,
    units_changed,
    word_subset,
    words,
)

PER_CLASS = 30
# The classes whose every pair uses only the quoted sentence's words (the issue's hostile model);
# units (μ dropped), polarity (a negative prefix dropped, "dependent on") and causal ("caused") may add one.
SUBSET_ONLY = (ROLES, NUMBERS, COMPARISON, SPLICED, MODALITY, QUANTIFIER, SYNTHESIS)


@pytest.fixture(scope="module")
def sentences(shared_data):
    return load_sentences(shared_data / "scifact" / "original" / "corpus.jsonl")


@pytest.fixture(scope="module")
def generated(sentences):
    return generate(sentences, PER_CLASS, seed=35)


def _sentence(text: str) -> Sentence:
    return Sentence(1, 0, text, "a title", "A first sentence. " + text)


def _claims(rewrite, text: str) -> list[str]:
    return [claim for _, claim, _, _, _ in rewrite(_sentence(text))]


def test_every_class_yields_its_pairs_from_distinct_abstracts(generated):
    assert set(generated) == set(ATTACK_CLASSES) | set(CONTROL_CLASSES)
    for name, pairs in generated.items():
        assert len(pairs) == PER_CLASS, name
        assert len({p.sentence.doc_id for p in pairs}) == PER_CLASS, name
        assert all(p.kind == name and p.honest == (name in CONTROL_CLASSES) for p in pairs)


def test_every_attack_quotes_its_sentence_verbatim_and_changes_what_it_says(generated):
    for name in ATTACK_CLASSES:
        for p in generated[name]:
            assert p.quote in p.sentence.text, (name, p.quote)
            assert meaning_changed(p), (name, p.claim, p.quote, p.edit)
            assert words(p.claim) != words(p.quote), (name, p.claim)
            if p.subset:
                assert word_subset(p.claim, p.quote), (name, p.claim, set(words(p.claim)) - set(words(p.quote)))


def test_the_issue_classes_of_the_hostile_model_use_only_the_sentence_words(generated):
    for name in SUBSET_ONLY:
        assert all(p.subset and word_subset(p.claim, p.quote) for p in generated[name]), name
    # and in the others, most pairs do too
    for name in (UNITS, POLARITY, CAUSAL):
        assert sum(word_subset(p.claim, p.quote) for p in generated[name]) >= PER_CLASS // 3, name


def test_every_class_has_several_shapes(generated):
    for name, at_least in ((NUMBERS, 3), (UNITS, 2), (COMPARISON, 4), (MODALITY, 4), (QUANTIFIER, 3),
                           (POLARITY, 5), (CAUSAL, 2), (SYNTHESIS, 4), (HEDGE, 2)):
        assert len({p.variant for p in generated[name]}) >= at_least, name


def test_every_control_is_faithful_by_construction(generated):
    for name in CONTROL_CLASSES:
        for p in generated[name]:
            assert p.quote == (p.sentence.text if name == WHOLE else p.sentence.body) and faithful(p), (name, p.claim)
    for p in generated[WHOLE]:
        assert p.claim == p.quote
    for p in generated[COORDINATION]:
        assert sorted(words(p.claim)) == sorted(words(p.quote)) and p.claim != p.quote


def test_the_checks_reject_an_unchanged_claim_and_an_unfaithful_control(generated):
    for name in ATTACK_CLASSES:
        for p in generated[name][:5]:
            assert not meaning_changed(replace(p, claim=p.quote)), name          # the edit undone
            assert not word_subset(p.claim + " in every patient", p.quote)
    deletion = generated[DELETION][0]
    assert not faithful(replace(deletion, edit=Edit("drop", "not"), claim=deletion.claim))
    hedge = generated[HEDGE][0]
    assert not faithful(replace(hedge, claim=hedge.quote.replace("suggest", "show").replace("may ", "")
                                .replace("might ", "").replace("could ", "").replace("likely", "")))
    coordination = generated[COORDINATION][0]
    assert not faithful(replace(coordination, claim=coordination.quote))
    passive = generated[PASSIVE][0]
    assert not faithful(replace(passive, claim=passive.quote))


def test_the_same_seed_gives_the_same_pairs_and_another_seed_others(sentences):
    some = sentences[:4000]
    first, again, other = generate(some, 5, seed=1), generate(some, 5, seed=1), generate(some, 5, seed=2)
    assert first == again
    assert [p.claim for p in first[WHOLE]] != [p.claim for p in other[WHOLE]]


# ---------------------------------------------------------------- the issue's examples

EXAMPLES = [
    (roles_swapped, "Cold acclimation markedly reduced plasma levels of adiponectin.",
     ["Plasma levels of adiponectin markedly reduced cold acclimation."]),
    (roles_swapped, "We found that insulin reduced glucose levels in mice.",
     ["We found that glucose levels reduced insulin in mice."]),
    (roles_swapped, "We hypothesized that insulin reduced glucose levels in mice.", []),
    (faithful_passive, "Cold acclimation markedly reduced plasma levels of adiponectin.",
     ["Plasma levels of adiponectin were markedly reduced by cold acclimation."]),
    (faithful_passive, "Insulin reduced glucose levels only when given with food.", []),
    (numbers_rebound, "Participants were aged 57 to 85 (mean 70) at enrolment.",
     ["Participants were aged 57 to 70 (mean 85) at enrolment."]),
    (numbers_rebound, "Levels were 200 compared with 25.8 in controls.",
     ["Levels were 25.8 compared with 200 in controls."]),
    (numbers_rebound, "Risk fell by 30 (95% CI 12-48) in the treated group.",
     ["Risk fell by 95 (30% CI 12-48) in the treated group."]),
    (numbers_rebound, "Mean heart rate ranged from 193 to 206 beats per minute.", []),   # a range reads both ways
    (units_changed, "The pores were 2.5 μm wide in the treated membranes.",
     ["The pores were 2.5 m wide in the treated membranes."]),
    (units_changed, "Patients were followed for 15 years, with visits every 6 months.",
     ["Patients were followed for 15 months, with visits every 6 months."]),
    (comparison_reversed, "Graft patency was higher in non-smokers than in smokers at one year.",
     ["Graft patency was higher in smokers than in non-smokers at one year."]),
    (comparison_reversed, "Among the risk factors, fibrinogen levels ranked first, followed by smoking markers.",
     ["Among the risk factors, smoking markers ranked first, followed by fibrinogen levels."]),
    (comparison_reversed, "Mortality was highest in men and lowest in women over the period.",
     ["Mortality was lowest in men and highest in women over the period."]),
    (comparison_reversed, "The therapy helps both PD-L1 positive and PD-L1 negative patients.", []),
    (clauses_spliced, "Serum leptin increased after the diet, whereas insulin sensitivity remained unchanged.",
     ["Serum leptin remained unchanged."]),
    (modality_dropped, "We hypothesized that stem cells segregate their chromosomes asymmetrically.",
     ["Stem cells segregate their chromosomes asymmetrically."]),
    (modality_dropped, "Variants in this gene have been postulated to affect insulin secretion.",
     ["Variants in this gene affect insulin secretion."]),
    (modality_dropped, "Others support the notion that aspirin prevents colorectal cancer in adults.",
     ["Aspirin prevents colorectal cancer in adults."]),
    # a recipient ("reported to the coordinator"), not another party's view: not an attack (SciFact 11349166)
    (modality_dropped, "Patients with a CJD diagnosis and a history of donating blood were reported to the study "
                       "coordinator.", []),
    (quantifier_changed, "Less than 6% of HSCs retained BrdU after four months of chase.",
     ["HSCs retained BrdU after four months of chase."]),
    (quantifier_changed, "Less than 6% of all HSCs retained BrdU after four months of chase.",
     ["All HSCs retained BrdU after four months of chase."]),
    (causal_from_associational, "Smoking was associated with increased risk of stroke in women.",
     ["Smoking increased risk of stroke in women."]),
    (causal_from_associational, "Obesity was associated with asthma in the cohort.",
     ["Obesity caused asthma in the cohort."]),
    (faithful_deletion, "Cardiovascular disease (CVD) is the leading cause of death worldwide.",
     ["Cardiovascular disease is the leading cause of death worldwide."]),
    (faithful_deletion, "The drug was effective (but not in children) in the trial.", []),
    (reordered_coordination, "The drug was tested in mice and rats in two laboratories.",
     ["The drug was tested in rats and mice in two laboratories."]),
    (reordered_coordination, "Rates were 5 and 7 in mice and rats, respectively.", []),
    (reordered_coordination, "Economics is central to the history of the rise and fall of nations.", []),
]


@pytest.mark.parametrize(("rewrite", "text", "expected"), EXAMPLES,
                         ids=[f"{r.__name__}-{i}" for i, (r, _, _) in enumerate(EXAMPLES)])
def test_the_issue_examples_and_what_is_left_alone(rewrite, text, expected):
    assert _claims(rewrite, text) == expected


def test_polarity_inverted():
    claims = _claims(polarity_inverted, "The effect was largely independent of food intake in non-infectious cases.")
    assert "The effect was largely independent of food intake in infectious cases." in claims
    assert "The effect was dependent on food intake in non-infectious cases." in claims
    assert _claims(polarity_inverted, "The cells died by apoptosis rather than necrosis in culture.")[0] == \
        "The cells died by necrosis in culture."
    assert "The drug reduce mortality in the trial." in _claims(polarity_inverted,
                                                                "The drug failed to reduce mortality in the trial.")
    assert _claims(polarity_inverted, "Local infusion of agonists impairs feeding.") == []   # "in"/"im" not a negation


def test_a_pair_with_a_quote_outside_its_sentence_is_not_a_pair(generated):
    from bench.attack_generation import _accept, pair_classes

    p = generated[ROLES][0]
    classes = pair_classes([p.sentence])
    assert _accept(classes[ROLES], p)
    assert not _accept(classes[ROLES], replace(p, quote=p.quote + " and more"))
    unchanged = Pair(ROLES, "x", False, p.quote, p.quote, p.sentence, Edit("swap", "a", "b"), True)
    assert not _accept(classes[ROLES], unchanged)
