"""De-identification of outbound questions (EVB-3): what is removed, what is deliberately kept."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from forum_atlas.deliberation.deidentify import PLACEHOLDERS, deidentify


def removed(text: str) -> list[tuple[str, str]]:
    return [(r.kind, text[r.start:r.end]) for r in deidentify(text)[1]]


@pytest.mark.parametrize("text, kind, value", [
    ("Write to jane.doe+triage@clinic.example.co.uk today", "email", "jane.doe+triage@clinic.example.co.uk"),
    ("mailto:a.b@example.org", "email", "a.b@example.org"),
    ("Call +44 20 7946 0958 after 5", "phone", "+44 20 7946 0958"),
    ("Ring +1 (202) 555-0143 now", "phone", "+1 (202) 555-0143"),
    ("Paris: +33 1 23 45 67 89.", "phone", "+33 1 23 45 67 89"),
    ("Berlin +49 (0)30 1234567", "phone", "+49 (0)30 1234567"),
    ("office (555) 123-4567 please", "phone", "(555) 123-4567"),
    ("office 555-123-4567 please", "phone", "555-123-4567"),
    ("office 555.123.4567 please", "phone", "555.123.4567"),
    ("office 555 123 4567 please", "phone", "555 123 4567"),
    ("toll free 1-800-555-0199", "phone", "1-800-555-0199"),
    ("tel: 5551234", "phone", "5551234"),
    ("Phone no. 020 7946 0958", "phone", "020 7946 0958"),
    ("MRN 12345678 was admitted", "id_number", "12345678"),
    ("MRN: 00012345", "id_number", "00012345"),
    ("SSN 123-45-6789 on file", "id_number", "123-45-6789"),
    ("her number is 123-45-6789", "id_number", "123-45-6789"),
    ("patient ID AB-552211 reported pain", "id_number", "AB-552211"),
    ("Patient id ab-552211", "id_number", "ab-552211"),
    ("see record #99887766", "id_number", "99887766"),
    ("medical record number 4455-6677", "id_number", "4455-6677"),
    ("passport X12345678", "id_number", "X12345678"),
    ("case no. 2021-0457", "id_number", "2021-0457"),
    ("ID 4455667 was flagged", "id_number", "4455667"),
    ("account 9988776655 is overdrawn", "id_number", "9988776655"),
    ("reference 20190315", "id_number", "20190315"),  # a date-shaped 8-digit run is not spared
])
def test_identifiers_are_removed(text, kind, value):
    assert removed(text) == [(kind, value)]
    outbound, _ = deidentify(text)
    assert value not in outbound and PLACEHOLDERS[kind] in outbound


@pytest.mark.parametrize("text", [
    "In 2019 and 2019-2020 the rate fell; between 1990 and 2020 GDP grew",
    "25 mg daily, 0.5 mg/kg, 1200000 IU, 7500000 cells/mL",
    "12.5% of patients, 10-12 percent, p<0.001, p = 0.0001234, P=.003",
    "95% CI 1.23-4.56; OR 0.69 (0.64-0.74); ages 18-65; 100-200 mg",
    "pi is 3.14159265 and e is 2.7182818",
    "1,234,567 patients; population 8336817 people; $12500000 budget; USD 25000000",
    "doi 10.1056/NEJMoa2034577 and https://doi.org/10.1000/1234567 and doi:10.1000/xyz123",
    "PMID 31234567, PMC7654321, NCT04368728, ISBN 978-0-306-40615-7, arXiv:2104.08663",
    "COVID-19 cases rose; the claim 12345 is old; the ID of the drug; case 2019 data",
    "Will UNRATE exceed 4.5% by 2026-06-30?",
])
def test_quantities_years_and_literature_ids_are_kept(text):
    outbound, redactions = deidentify(text)
    assert redactions == () and outbound == text


def test_redactions_keep_span_digest_and_placeholder_never_the_value():
    text = "Patient jane@x.org, MRN 12345678, phone +44 20 7946 0958: does drug A lower LDL by 25 mg/dL?"
    outbound, redactions = deidentify(text)
    assert outbound == "Patient [EMAIL], MRN [ID], phone [PHONE]: does drug A lower LDL by 25 mg/dL?"
    assert [r.kind for r in redactions] == ["email", "id_number", "phone"]
    for r in redactions:
        value = text[r.start:r.end]
        assert r.digest == hashlib.sha256(value.encode()).hexdigest()
        assert r.placeholder == PLACEHOLDERS[r.kind]
        assert value not in repr(r)  # only span, digest and placeholder are kept
    assert redactions[0].start < redactions[1].start < redactions[2].start


def test_keyed_digest_when_a_secret_is_given():
    _, (plain,) = deidentify("SSN 123-45-6789")
    _, (keyed,) = deidentify("SSN 123-45-6789", secret=b"platform-key")
    assert plain.digest == hashlib.sha256(b"123-45-6789").hexdigest()
    assert keyed.digest == hmac.new(b"platform-key", b"123-45-6789", hashlib.sha256).hexdigest()
    assert keyed.digest != plain.digest and (keyed.start, keyed.end) == (plain.start, plain.end)


def test_deterministic_and_idempotent():
    text = "Contact a@b.co or 555-123-4567 about record #99887766 and ID 4455667."
    first = deidentify(text)
    assert first == deidentify(text)
    outbound, _ = first
    assert deidentify(outbound) == (outbound, ())  # placeholders are not re-redacted


def test_overlapping_patterns_yield_one_redaction():
    # the digits of a labelled ID are also a 7+ digit run; the phone after "tel" is also a US number
    assert removed("MRN 12345678") == [("id_number", "12345678")]
    assert removed("tel 555-123-4567") == [("phone", "555-123-4567")]
    assert removed("") == []
