"""The offline engine's answer cues: what kind of answer a question asks for, whether a sentence holds one the
question does not already state, and which lines are headings."""

import pytest

from forum_atlas.deliberation import answers
from forum_atlas.deliberation.answers import AnswerKind


@pytest.mark.parametrize("question, kind", [
    ("How much honey did the apiary produce in 2023?", AnswerKind.QUANTITY),
    ("How long did the trial last?", AnswerKind.QUANTITY),
    ("What was the optimal growth temperature of the Asgard ancestor?", AnswerKind.QUANTITY),
    ("How many hives did the apiary keep?", AnswerKind.COUNT),
    ("What is the number of hives?", AnswerKind.COUNT),
    ("When did the pilot start?", AnswerKind.DATE),
    ("In which year was the law passed?", AnswerKind.DATE),
    ("Who built the plant?", AnswerKind.AGENT),
    ("Which company supplies the tanks?", AnswerKind.AGENT),
    ("Vitamin D supplementation reduces fracture risk.", None),
    ("Does vitamin D supplementation reduce fracture risk in the elderly?", None),
    ("Why can an elongation factor estimate habitat temperature?", None),
])
def test_the_asked_kind(question, kind):
    assert answers.asked_kind(question) is kind


@pytest.mark.parametrize("kind, sentence, held", [
    (AnswerKind.QUANTITY, "The hives produced 148 kilograms of honey in 2023.", True),
    (AnswerKind.QUANTITY, "The tanks collected 12,000 litres of rainwater.", True),
    (AnswerKind.QUANTITY, "Growth was best around 53 °C.", True),
    (AnswerKind.QUANTITY, "Trips rose by forty-one percent.", True),
    (AnswerKind.QUANTITY, "The scheme cost £3.4 million.", True),
    (AnswerKind.QUANTITY, "The apiary kept twelve hives through 2023.", False),   # a count and the asked year
    (AnswerKind.COUNT, "The apiary kept twelve hives through 2023.", True),
    (AnswerKind.COUNT, "The apiary kept hives through 2023.", False),             # 2023 is the question's
    (AnswerKind.DATE, "Sampling began in March 2021.", True),
    (AnswerKind.DATE, "Sampling began after the winter.", False),
    (AnswerKind.AGENT, "The plant was built by Northwind Energy Ltd.", True),
    (AnswerKind.AGENT, "Builders finished the plant on time.", False),            # a capital that starts the sentence
])
def test_holds_an_answer_the_question_does_not_state(kind, sentence, held):
    assert answers.holds_answer(kind, sentence, "How much honey did the apiary keep in 2023?") is held


def test_findings_aims_and_methods():
    assert answers.reports_finding("Supplementation lowered the fracture rate (p < 0.01).")
    assert not answers.reports_finding("We aimed to determine whether supplementation lowered the fracture rate.")
    assert answers.states_only_aim_or_method("Participants were recruited from 12 clinics.")
    assert not answers.states_only_aim_or_method("Fracture rates were not lower in the supplemented group.")


def test_headings_are_not_statements():
    title = "Hillside Apiary: Honey Production Report 2023"
    assert answers.is_heading(title, title) and answers.is_heading("Honey production", title)
    assert answers.is_heading("Hillside apiary: honey production report 2023.", title)   # the title, however written
    assert not answers.is_heading("The hives produced 148 kilograms of honey.", title)
    assert not answers.is_heading("Collisions involving cyclists | 9 | 3 | -6", title)    # a table row is data
