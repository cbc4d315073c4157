"""What a question asks for, and whether a sentence holds it: the offline engine's answer cues.

A question's wording names the kind of answer it wants: "how much" a quantity with a unit, "how many" a
count, "when" a date or a year, "who" a person or an organisation, "what temperature / cost / share …" a
measured quantity. A sentence holds the answer when it has one of that kind beyond what the question
already says: the "2023" of "How much honey did the apiary produce in 2023?" is the question's, not an
answer. A question written as a statement (a claim to check, as SciFact's) asks for no kind: then a
sentence that reports a finding (a comparison, an outcome, "we found") is preferred to one that only
states an aim or a method.

Also here: whether a sentence is a heading (a title line, not a statement), which is never the answer.
Plain Python: regular expressions over the text, no model.
"""

from __future__ import annotations

import re
from enum import Enum


class AnswerKind(Enum):
    QUANTITY = "a quantity with its unit"
    COUNT = "a count"
    DATE = "a date or year"
    AGENT = "a person or organisation"


_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                 "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                 "hundred thousand million billion dozen half")
_NUMBER_WORD = r"(?:" + "|".join(_NUMBER_WORDS.split()) + r")(?:-(?:one|two|three|four|five|six|seven|eight|nine))?"
# 12,000 · 148 · 20.5 · 0.88 (a thousands separator is a comma or a thin space, never a plain space:
# "612 863" is two numbers)
_DIGITS = r"\d{1,3}(?:[,\u2009\u202f]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
NUMBER = re.compile(rf"(?<![\w.])(?:{_DIGITS})(?![\d])|\b{_NUMBER_WORD}\b", re.IGNORECASE)
_SCALE = r"(?:\s*(?:thousand|million|billion|trillion|bn|m|k))?"
_UNITS = r"""%|percent|per\s?cent|percentage\s+points?|°\s?[CF]|℃|degrees?(?:\s+(?:celsius|fahrenheit))?|kelvin
    |kg|kilogram(?:me)?s?|g|grams?|mg|µg|μg|ng|tonnes?|tons?|lbs?|pounds?|oz|ounces?
    |litres?|liters?|l|ml|mL|gallons?|m3|cubic\s+met(?:re|er)s?
    |km|kilomet(?:re|er)s?|m|met(?:re|er)s?|cm|mm|µm|μm|nm|miles?|feet|foot|ft|inch(?:es)?|hectares?|ha|acres?
    |km2|m2|square\s+(?:kilomet(?:re|er)s?|met(?:re|er)s?|miles?)
    |seconds?|secs?|s|min|minutes?|hours?|hrs?|h|days?|weeks?|months?|years?|decades?
    |dollars?|euros?|pence|cents?|yen|yuan|kwh|mwh|gwh|twh|kw|mw|gw|watts?|w|volts?|v|mmol(?:/l)?|mol|mm\s?hg|bpm
    |fold|times|x"""
_UNIT = rf"(?:{_UNITS})".replace("\n", "").replace(" ", "")
QUANTITY = re.compile(
    rf"(?:[$£€¥]\s?(?:{_DIGITS}){_SCALE})"                                     # $12, £3.4 million
    rf"|(?:(?<![\w.])(?:{_DIGITS})|\b{_NUMBER_WORD}){_SCALE}(?:\s|-)?{_UNIT}(?![A-Za-z])",   # 148 kilograms
    re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec")
DATE = re.compile(r"\b(?:1[5-9]\d\d|20\d\d)s?\b|\b\d{4}-\d{2}-\d{2}\b|\b(?:" + "|".join(_MONTHS.split()) +
                  r")\.?\s+\d{1,4}\b|\b\d{1,2}\s+(?:" + "|".join(_MONTHS.split()) + r")\b", re.IGNORECASE)
_ORGANISATION_WORDS = ("University|Institute|Council|Ministry|Department|Agency|Committee|Company|Corporation|Inc|"
                       "Ltd|LLC|Association|Foundation|Society|Authority|Commission|Office|Board|Trust|Laboratory|"
                       "Hospital|Centre|Center|Bank|Government|Service|Organi[sz]ation")
AGENT = re.compile(rf"\b(?:Dr|Prof|Mr|Mrs|Ms|Sir|Dame)\.?\s+[A-Z][\w'-]+"
                   rf"|\b[A-Z][\w'-]+(?:\s+(?:of\s+)?[A-Z][\w'-]+)+"
                   rf"|\b(?:{_ORGANISATION_WORDS})\b")

# Nouns that make a "what"/"which" question ask for a measured quantity ("What was the optimal growth
# temperature …?"), matched by their first letters.
_MEASURES = re.compile(r"\b(?:temperatur|percentag|proportion|share|fraction|cost|price|amount|size|length|weight|"
                       r"mass|volume|height|depth|distance|speed|duration|dose|dosage|concentration|age|revenue|"
                       r"income|budget|yield|ratio|frequenc|capacity|output|production|prevalence|incidence|"
                       r"efficiency|accuracy|sensitivity|specificity|rate|value|total|sum|figure|level)",
                       re.IGNORECASE)
_COUNT_NOUNS = re.compile(r"\bnumber\s+of\b", re.IGNORECASE)
_HOW_QUANTITY = re.compile(r"\bhow\s+(?:much|long|far|large|big|heavy|tall|high|deep|old|fast|often|warm|hot|cold|"
                           r"expensive|wide|small|low|many\s+(?:percent|kilograms|litres|liters|dollars))\b",
                           re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
_WHEN = re.compile(r"^\W*(?:when|since\s+when|until\s+when)\b|\b(?:what|which|in\s+what|in\s+which)\s+"
                   r"(?:year|date|month|day|decade|century)\b", re.IGNORECASE)
_WHO = re.compile(r"^\W*(?:who|whom|whose)\b|\b(?:by\s+whom|which|what)\s+(?:person|people|company|companies|"
                  r"organi[sz]ations?|agency|agencies|authority|authorities|institutions?|body|bodies|firm|firms|"
                  r"group|author|authors|researchers?|scientists?|team)\b", re.IGNORECASE)
_WHAT = re.compile(r"^\W*(?:what|which)\b|\b(?:what|which)\s+(?:was|were|is|are)\b", re.IGNORECASE)


def asked_kind(question: str) -> AnswerKind | None:
    """The kind of answer the question's wording asks for, or None (a statement, a yes/no or why question)."""
    if _HOW_QUANTITY.search(question):
        return AnswerKind.QUANTITY
    if _HOW_MANY.search(question):
        return AnswerKind.COUNT
    if _WHEN.search(question):
        return AnswerKind.DATE
    if _WHO.search(question):
        return AnswerKind.AGENT
    if _WHAT.search(question):
        if _COUNT_NOUNS.search(question):
            return AnswerKind.COUNT
        if _MEASURES.search(question):
            return AnswerKind.QUANTITY
    return None


def _normal(text: str) -> str:
    return " ".join(text.lower().replace(",", "").split())


_PATTERNS = {AnswerKind.QUANTITY: QUANTITY, AnswerKind.COUNT: NUMBER, AnswerKind.DATE: DATE,
             AnswerKind.AGENT: AGENT}


def holds_answer(kind: AnswerKind, sentence: str, question: str) -> bool:
    """Whether `sentence` has an answer of `kind` that the question does not already state.

    An agent is a name other than the sentence's first word (every sentence starts with a capital)."""
    asked = _normal(question)
    for match in _PATTERNS[kind].finditer(sentence):
        if kind is AnswerKind.AGENT and match.start() == len(sentence) - len(sentence.lstrip()):
            continue
        if _normal(match.group(0)) not in asked:
            return True
    return False


_FINDING = re.compile(
    r"\b(?:found|finds?|show(?:s|ed|n)?|demonstrat(?:e|es|ed)|reveal(?:s|ed)?|indicat(?:e|es|ed)|suggest(?:s|ed)?|"
    r"observed|associated|correlated?|linked|increas(?:e|es|ed)|decreas(?:e|es|ed)|reduc(?:e|es|ed)|"
    r"improv(?:e|es|ed)|lower|higher|greater|fewer|less|more\s+likely|risk\s+of|significant(?:ly)?|"
    r"(?:did|does|do|was|were)\s+not|conclu(?:de|ded|sion)|results?\s+(?:show|suggest|indicate)|"
    r"p\s*[<=]|odds\s+ratio|hazard\s+ratio|confidence\s+interval|95\s*%)(?!\w)",
    re.IGNORECASE)
_AIM_OR_METHOD = re.compile(
    r"\b(?:we\s+(?:aimed|sought|investigated|examined|assessed|evaluated|conducted|performed|studied|analy[sz]ed|"
    r"used|measured|recruited|enrolled|designed|developed|hypothesi[sz]ed|describe)|"
    r"(?:aim|aims|objective|objectives|purpose|goal)\s+(?:of|was|were|is)|"
    r"to\s+(?:determine|investigate|examine|assess|evaluate|explore|identify|compare|characteri[sz]e)\b|"
    r"(?:were|was)\s+(?:recruited|enrolled|randomi[sz]ed|assigned|collected|obtained|performed|used)|"
    r"this\s+(?:study|paper|article|review)\s+(?:examines|investigates|describes|reports|aims))(?!\w)",
    re.IGNORECASE)
# The labels of a structured abstract, as the sentence's first word: what the sentence is.
_RESULT_LABEL = re.compile(r"^\W*(?:RESULTS?|CONCLUSIONS?|FINDINGS|INTERPRETATION)\b")
_AIM_OR_METHOD_LABEL = re.compile(r"^\W*(?:BACKGROUND|INTRODUCTION|CONTEXT|OBJECTIVES?|AIMS?|PURPOSE|GOALS?|METHODS?|"
                                  r"DESIGN|SETTINGS?|PARTICIPANTS|PATIENTS|MEASUREMENTS|INTERVENTIONS?)\b")


def reports_finding(sentence: str) -> bool:
    """A sentence that states a result rather than only an aim or a method."""
    if _RESULT_LABEL.search(sentence):
        return True
    return (bool(_FINDING.search(sentence)) and not _AIM_OR_METHOD.search(sentence)
            and not _AIM_OR_METHOD_LABEL.search(sentence))


def states_only_aim_or_method(sentence: str) -> bool:
    """A sentence that states an aim, a background or a method and no result."""
    if _AIM_OR_METHOD_LABEL.search(sentence):
        return True
    return bool(_AIM_OR_METHOD.search(sentence)) and not _FINDING.search(sentence) and not _RESULT_LABEL.search(sentence)


_TERMINAL = re.compile(r"[.!?:;][\"'”’)\]]*$")
HEADING_MAX_WORDS = 16


def is_heading(sentence: str, title: str) -> bool:
    """A title line, not a statement: the document's title itself, or a short line without end punctuation
    and without a figure (a table row such as "Collisions involving cyclists | 9 | 3" is data, not a heading)."""
    text = " ".join(sentence.split())
    if title and _normal(text).rstrip(".") == _normal(title).rstrip("."):
        return True
    return (not _TERMINAL.search(text) and len(text.split()) <= HEADING_MAX_WORDS
            and not NUMBER.search(re.sub(DATE, "", text)))
