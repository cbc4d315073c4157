"""De-identify a question before it leaves the platform (EVB-3): e-mail addresses, phone numbers and
ID / record numbers are replaced by `[EMAIL]`, `[PHONE]` and `[ID]`.

`deidentify(text)` returns the outbound text and one `Redaction` per removed value: its kind, its
span in the ORIGINAL text, a digest of the removed text and the placeholder. The value itself is
never kept. The digest is a plain sha256 hex by default; a short value (a phone number, an SSN) can
be recovered from a plain sha256 by enumeration, so a caller that keeps redactions anywhere shared
should pass `secret=` (a platform key) to get an HMAC-SHA256 instead.

What is removed
- e-mail: `local@domain.tld` (also `mailto:` links, the address only).
- phone: international `+cc …` numbers (8–15 digits; spaces, dots, dashes, `(0)` / `(area)`),
  US/NANP `(555) 123-4567`, `555-123-4567`, `555.123.4567`, `555 123 4567`, `1-800-555-0199`, and
  any 7–15-digit group right after a phone word ("tel", "phone", "mobile", "cell", "fax", "call").
- ID / record numbers: the value after an ID label — MRN, SSN, "patient ID", "medical record
  number", "record #", "case/account/member/policy/insurance/passport/licence number", "NHS
  number", a bare "ID" — when it contains a digit (the label stays, so "MRN [ID]" still reads);
  the SSN shape `123-45-6789` anywhere; any other run of 7+ digits.

What is deliberately kept (false-positive guards)
- years (`2019`, `2019-2020`), doses and measurements (`25 mg`, `1200000 IU`, `7500000 cells/mL`),
  percentages, p-values, confidence intervals, decimals (`3.1415926`), thousands-separated counts
  (`1,234,567`) and money (`$12500000`): numbers with a unit or a count noun after them, a currency
  sign before them, or a decimal point / separator inside them are quantities, not identifiers.
- literature identifiers: DOIs (`10.1056/NEJMoa2034577`), PMID/PMCID, ISBN/ISSN, arXiv ids and
  ClinicalTrials.gov NCT numbers, and digits inside URLs. They name publications, not people, and the
  evidence sources need them verbatim.
- dates are not redacted unless they look like a 7+-digit run (`20190315` is redacted as [ID]):
  dates of birth written as dates are outside this function's remit (not requested by EVB-3's
  brief; a question about a person's date of birth is not expected).

Residual risk, stated plainly: names, addresses and free-text identifiers are not detected, and an
ID written without a label in fewer than 7 digits (e.g. "AB-552211" on its own) is kept.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

from forum_atlas.deliberation.model import Redaction

PLACEHOLDERS = {"email": "[EMAIL]", "phone": "[PHONE]", "id_number": "[ID]"}

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}\b")

# A labelled identifier: the label (kept) then the value (removed). The value must hold a digit.
_SUFFIX = r"\s*(?:id\b|identifier\b|number\b|num\b|no\b\.?|#)"
_ID_LABEL = (
    # weak words: an identifier only with a suffix ("patient ID", "case no.", "account #")
    r"(?:patient|record|case|account|acct|member|membership|policy|insurance|subscriber|employee|student|"
    r"customer|claim|visit|encounter|chart|accession|health\s+card|licen[cs]e|nhs|social\s+security)" + _SUFFIX
    # strong labels: an identifier on their own
    + r"|medical\s+record(?:" + _SUFFIX + r")?|passport(?:" + _SUFFIX + r")?|driver'?s?\s+licen[cs]e(?:"
    + _SUFFIX + r")?|\bmrn\b|\bssn\b|\bid\b|\bmr\s*#"
)
_ID = re.compile(
    r"(?i)(?P<label>\b(?:" + _ID_LABEL + r"))\s*(?:[:#=]\s*)?"
    r"(?P<value>(?=[A-Za-z0-9-]*\d)[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){3,39})(?![\w@])"
)
_SSN = re.compile(r"(?<![\w.-])\d{3}-\d{2}-\d{4}(?![\w-])")

_SEP = r"[ .\-\u00a0]"
_PHONE_INTL = re.compile(
    r"(?<![\w+])\+\d{1,3}(?:" + _SEP + r"?\(\d{1,4}\))?(?:" + _SEP + r"?\d{1,5}){1,6}(?![\w])"
)
_PHONE_US = re.compile(
    r"(?<![\w.+-])(?:1" + _SEP + r")?(?:\(\d{3}\)\s?|\d{3}" + _SEP + r")\d{3}" + _SEP + r"\d{4}(?![\w-]|\.\d)"
)
_PHONE_WORD = re.compile(
    r"(?i)\b(?:tel|telephone|phone|ph|mobile|mob|cell|cellphone|fax|call|contact\s+number)\b\.?\s*(?:no\.?|number|#)?"
    r"\s*[:#]?\s*(?P<value>\+?\(?\d[\d ().\-\u00a0]{5,22}\d)"
)
_DIGITS = re.compile(r"(?<![\w.,/$€£¥-])\d{7,}(?![\w]|[.,]\d)")

# Quantities: a unit or count noun after the number.
_UNIT_AFTER = re.compile(
    r"(?i)\s?(?:%|percent|mg|g|kg|mcg|µg|ug|ng|pg|ml|l|dl|mmol|mol|iu|units?|cells?|copies|bp|kb|mb|gb|tb|"
    r"km|m|cm|mm|nm|miles?|ft|tons?|tonnes?|hz|khz|mhz|usd|eur|gbp|dollars?|euros?|people|persons?|"
    r"patients?|participants?|subjects?|cases?|deaths?|residents?|inhabitants?|individuals?|children|adults|"
    r"women|men|households?|births?|samples?|reads?|years?|months?|days?|hours?|words?|tokens?|times|"
    r"votes?|visits?|jobs|barrels?|bpd|tweets?|users?|downloads?)\b"
)
_CURRENCY_BEFORE = re.compile(r"[$€£¥]\s?$|(?i:\b(?:usd|eur|gbp))\s?$")

# Literature and public identifiers: spans inside these are never redacted.
_PUBLIC = re.compile(
    r"(?i)\b10\.\d{4,9}/[^\s\"<>]+"                                   # DOI
    r"|\bdoi:\s*\S+"
    r"|\b(?:pmid|pmcid|pubmed(?:\s+id)?|isbn(?:-1[03])?|issn|arxiv)\s*[:#]?\s*(?:pmc)?[\dX][\dX.\-/v]*"
    r"|\bPMC\d+\b|\bNCT\d{8}\b"
    r"|\bhttps?://\S+|\bwww\.\S+"
)
_YEAR = re.compile(r"^(?:1[5-9]|20)\d{2}(?:[-\u2013/](?:1[5-9]|20)?\d{2})?$")  # 2019, 2019-20, 2019-2020


@dataclass(frozen=True)
class _Hit:
    kind: str
    start: int
    end: int
    priority: int


def _digits(s: str) -> int:
    return sum(ch.isdigit() for ch in s)


def _find(text: str) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in _EMAIL.finditer(text):
        hits.append(_Hit("email", m.start(), m.end(), 0))
    for m in _ID.finditer(text):
        value = m.group("value")
        label = m.group("label").lower().strip()
        if label == "id" and m.group("label") not in ("ID", "Id"):  # the word "id", not the label
            continue
        if _digits(value) < 3 and not label.startswith(("mrn", "ssn")):
            continue
        if _YEAR.match(value):
            continue
        hits.append(_Hit("id_number", m.start("value"), m.end("value"), 1))
    for m in _PHONE_WORD.finditer(text):
        value = m.group("value")
        if 7 <= _digits(value) <= 15:
            hits.append(_Hit("phone", m.start("value"), m.end("value"), 2))
    for m in _PHONE_INTL.finditer(text):
        if 8 <= _digits(m.group()) <= 15:
            hits.append(_Hit("phone", m.start(), m.end(), 2))
    for m in _PHONE_US.finditer(text):
        hits.append(_Hit("phone", m.start(), m.end(), 3))
    for m in _SSN.finditer(text):
        hits.append(_Hit("id_number", m.start(), m.end(), 3))
    for m in _DIGITS.finditer(text):
        if _UNIT_AFTER.match(text, m.end()) or _CURRENCY_BEFORE.search(text[max(0, m.start() - 5):m.start()]):
            continue
        hits.append(_Hit("id_number", m.start(), m.end(), 4))
    return hits


def _protected(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _PUBLIC.finditer(text):
        end = m.end()
        while end > m.start() and text[end - 1] in ".,;:)]}'\"":  # trailing punctuation is prose
            end -= 1
        spans.append((m.start(), end))
    return spans


def redaction_digest(value: str, secret: bytes | None) -> str:
    """What a redaction records of the value it removed: its SHA-256, keyed (HMAC) when a secret is set, so
    the same value can be recognised later and never read back."""
    data = value.encode("utf-8")
    if secret is not None:
        return hmac.new(secret, data, hashlib.sha256).hexdigest()
    return hashlib.sha256(data).hexdigest()


def deidentify(text: str, *, secret: bytes | None = None) -> tuple[str, tuple[Redaction, ...]]:
    """The text with personal identifiers replaced, and what was removed (never the values)."""
    protected = _protected(text)
    candidates = [h for h in _find(text)
                  if h.kind == "email" or not any(s <= h.start < e or s < h.end <= e for s, e in protected)]
    # Overlaps: the earliest start wins; at the same start the stronger pattern, then the longer span.
    candidates.sort(key=lambda h: (h.start, h.priority, -(h.end - h.start)))
    chosen: list[_Hit] = []
    for hit in candidates:
        if chosen and hit.start < chosen[-1].end:
            previous = chosen[-1]
            if hit.priority < previous.priority and hit.end >= previous.end:
                chosen[-1] = hit  # e.g. a labelled ID that a bare digit run started inside of
            continue
        chosen.append(hit)
    out: list[str] = []
    redactions: list[Redaction] = []
    cursor = 0
    for hit in chosen:
        placeholder = PLACEHOLDERS[hit.kind]
        out.append(text[cursor:hit.start])
        out.append(placeholder)
        redactions.append(Redaction(kind=hit.kind, start=hit.start, end=hit.end,  # type: ignore[arg-type]
                                    digest=redaction_digest(text[hit.start:hit.end], secret), placeholder=placeholder))
        cursor = hit.end
    out.append(text[cursor:])
    return "".join(out), tuple(redactions)


__all__ = ["PLACEHOLDERS", "deidentify"]
