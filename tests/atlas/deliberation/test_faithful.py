"""A [SOURCED] claim is a faithful restatement of its sentence (issue 35): each rule on real SciFact
sentences (corpus.jsonl, doc ids in the comments), with an attack it stops and an honest claim it keeps."""

from __future__ import annotations

import pytest

from forum_atlas.deliberation.faithful import active_voice, modality_class, tokens
from forum_atlas.deliberation.grounding import ground

COLD = ("Cold acclimation markedly reduced plasma levels of adiponectin, and systemic delivery of adiponectin "
        "protected ApoE(-/-) mice from plaque development.")                                         # 970012
FOLATE = "Plasma folate increased markedly by 1 hour (200 compared with 25.8 nmol/L; P<0.001)."          # 5152028
FOLIC = ("CONCLUSIONS These data suggest that folic acid improves endothelial function in CAD acutely by a "
         "mechanism largely independent of homocysteine.")                                            # 5152028
PEF = ("RESULTS There was a significantly greater increase in mean morning PEF in non-smokers than in smokers "
       "following inhaled fluticasone (27 l/min v -5 l/min).")                                       # 20611846
STEM = ("Stem cells are proposed to segregate chromosomes asymmetrically during self-renewing divisions so that "
        "older (‘immortal’) DNA strands are retained in daughter stem cells whereas newly synthesized strands "
        "segregate to differentiating cells.")                                                        # 4381486
HSC_VIEW = ("But although some authors have presented evidence that HSCs may arise directly from the aortic floor "
            "into the dorsal aortic lumen, others support the notion that HSCs first emerge within the underlying "
            "mesenchyme.")                                                                            # 243694
BRDU = ("In each case, less than 6% of HSCs retained BrdU and less than 0.5% of all BrdU-retaining "
        "haematopoietic cells were HSCs.")                                                            # 4381486
MET = ("Remarkably, Met-misacylation increases up to tenfold upon exposing cells to live or non-infectious "
       "viruses, toll-like receptor ligands or chemically induced oxidative stress.")                # 1748921
LIPOLYSIS = ("Here, we show that the cold-triggered food-intake-independent lipolysis significantly increased "
             "plasma levels of small low-density lipoprotein (LDL) remnants, leading to accelerated development "
             "of atherosclerotic lesions in mice.")                                                   # 970012
GLOMERULAR = ("Our data support a highly dynamic rather than a static nature of the glomerular environment and "
              "cellular composition.")                                                                # 123859
ARTERIOLES = ("We assessed vasomotor function of the adipose microvasculature using videomicroscopy of small "
              "arterioles (75-250 μm) isolated from different fat compartments.")                      # 79447

ATTACKS = [
    ("Plasma levels of adiponectin markedly reduced cold acclimation", COLD, "order_changed"),
    ("Cold acclimation protected ApoE(-/-) mice from plaque development", COLD, "clauses_spliced"),
    ("Plasma folate increased markedly by 1 hour (25.8 compared with 200 nmol/L)", FOLATE, "unit_changed"),
    ("Small arterioles (75-250 m) isolated from different fat compartments", ARTERIOLES, "unit_changed"),
    ("There was a significantly greater increase in mean morning PEF in smokers than in non-smokers", PEF,
     "comparison_reversed"),
    ("Folic acid improves endothelial function in CAD acutely", FOLIC, "modality_dropped"),
    ("Stem cells segregate chromosomes asymmetrically during self-renewing divisions", STEM, "modality_dropped"),
    ("HSCs first emerge within the underlying mesenchyme", HSC_VIEW, "modality_dropped"),
    ("HSCs retained BrdU", BRDU, "quantifier_changed"),
    ("Met-misacylation increases up to tenfold upon exposing cells to infectious viruses", MET, "polarity_clash"),
    ("The cold-triggered food intake significantly increased plasma levels of small low-density lipoprotein (LDL) "
     "remnants", LIPOLYSIS, "polarity_clash"),
    ("Our data support a static nature of the glomerular environment", GLOMERULAR, "polarity_clash"),
]
HONEST = [
    ("Cold acclimation markedly reduced plasma levels of adiponectin and systemic delivery of adiponectin "
     "protected ApoE(-/-) mice from plaque development", COLD),                                # a deletion
    ("Systemic delivery of adiponectin protected ApoE(-/-) mice from plaque development, and cold acclimation "
     "markedly reduced plasma levels of adiponectin in mice", COLD),                         # coordination swapped
    ("Plasma folate increased markedly by 1 hour (200 compared with 25.8 nmol/L)", FOLATE),
    ("These data suggest that folic acid improves endothelial function in CAD acutely", FOLIC),  # hedge kept
    ("There was a significantly greater increase in mean morning PEF in non-smokers than in smokers", PEF),
    ("Stem cells are proposed to segregate chromosomes asymmetrically during self-renewing divisions", STEM),
    ("In each case, less than 6% of HSCs retained BrdU", BRDU),
    ("Met-misacylation increases up to tenfold upon exposing cells to non-infectious viruses", MET),
    ("Small arterioles (75-250 µm) isolated from different fat compartments", ARTERIOLES),   # µ (micro sign) = μ
]


@pytest.mark.parametrize(("claim", "sentence", "reason"), ATTACKS)
def test_a_claim_that_changes_what_its_sentence_says_is_downgraded(claim, sentence, reason):
    assert ground(claim, sentence, sentence).failed == reason


@pytest.mark.parametrize(("claim", "sentence"), HONEST)
def test_a_faithful_restatement_keeps_the_tag(claim, sentence):
    result = ground(claim, sentence, sentence)
    assert result.failed is None and result.decided


def test_numbers_are_read_with_their_unit_and_role():
    # "aged 57 to 85 (mean 70)": the range end and the mean swapped
    sentence = "Participants were aged 57 to 85 years (mean 70 years) at baseline in this cohort."
    assert ground("Participants were aged 57 to 70 years (mean 85 years)", sentence, sentence).failed == "number_rebound"
    assert ground("Participants were aged 57 to 85 years", sentence, sentence).failed is None
    ci = "Statin use reduced risk by 20 percent (95% confidence interval 10 to 30) in this cohort."
    assert ground("Statin use reduced risk by 95 percent", ci, ci).failed == "number_rebound"
    years = "Patients were followed for 15 years after surgery and seen again at 6 months in this cohort study."
    assert ground("Patients were followed for 15 months after surgery", years, years).failed == "unit_changed"
    assert [t.text for t in tokens("2.5 µm")] == ["2.5", "μm"]


def test_polarity_is_counted_exactly_not_modulo_two():
    # keeping one of two negations, each governing its own words, is faithful
    sentence = "Drug A did not lower blood pressure in men, and no effect on heart rate was seen in this trial."
    assert ground("Drug A did not lower blood pressure in men", sentence, sentence).failed is None
    # dropping both negations of one clause (parity agrees) is not
    double = "Drug A did not fail to lower blood pressure in men in this trial."
    assert ground("Drug A did lower blood pressure in men", double, double).failed == "negation_clash"


def test_a_simple_passive_is_read_in_the_active_voice():
    assert active_voice("Binding of Tcfcp2l1 was reduced by acute depletion of Oct4.") == \
        "acute depletion of Oct4 reduced Binding of Tcfcp2l1"
    sentence = "Acute depletion of Oct4 reduced binding of Tcfcp2l1, Dax1, and Esrrb to several target genes."
    assert ground("Binding of Tcfcp2l1 was reduced by acute depletion of Oct4.", sentence, sentence).failed is None
    assert ground("Acute depletion of Oct4 was reduced by binding of Tcfcp2l1.", sentence, sentence).failed \
        == "order_changed"


def test_frames_are_an_open_class_by_rule():
    # words built on a hypothesis stem are cues without being listed one by one
    assert {modality_class(w) for w in ("postulates", "hypothesised", "speculative", "suggests")} == {"hedge"}
    assert {modality_class(w) for w in ("may", "possibly", "putative", "seems")} == {"modal"}
    # "suggest … may" keeps its "may": a proposing verb does not stand in for a dropped modal
    sentence = "Recent studies suggest that the nucleoplasmin pentamer may mediate histone storage in oocytes."
    assert ground("Recent studies suggest that the nucleoplasmin pentamer mediate histone storage", sentence,
                  sentence).failed == "modality_dropped"
    assert ground("The nucleoplasmin pentamer may mediate histone storage", sentence, sentence).failed is None
    assert modality_class("whether") == modality_class("objective") == "aim"
    assert modality_class("others") == "attribution"
    sentence = "These mutations have been postulated to affect splicing of the transcript in patients."
    assert ground("These mutations affect splicing of the transcript", sentence, sentence).failed == "modality_dropped"
