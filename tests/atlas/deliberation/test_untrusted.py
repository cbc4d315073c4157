"""Model output as untrusted input (issue 22): what a claim and a quote may hold, and the audit's
handling of what they may not — one bad claim downgraded with its reason, never a crash, a 1 MB claim
refused in well under a second."""

from __future__ import annotations

import hashlib
import time

import pytest

from forum_atlas.calls import CallRecord
from forum_atlas.deliberation.audit import RoundEvidence, SynthesisBasis, audit_reply, synthesis_basis
from forum_atlas.deliberation.model import (
    INFERRED,
    SOURCED,
    AuditedClaim,
    ClaimDraft,
    DraftReply,
    Passage,
    Section,
)
from forum_atlas.deliberation.untrusted import MAX_CLAIM_CHARS, MAX_QUOTE_CHARS, clean_claim, clean_note, quote_problem

TEXT = "Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65."
PASSAGE = Passage(label="S1", chunk_id=7, document_id=1, document_version=1, title="Trial", text=TEXT,
                  source_name="test")
EVIDENCE = RoundEvidence({"S1": PASSAGE})
CALL = CallRecord(stage="draft:technical#1", provider="hostile", version="1", input_digest="0" * 64)


@pytest.mark.parametrize(("text", "kind"), [
    ("a\x00b", "NUL"), ("a\ud800b", "lone surrogate"), ("a\x1b[31mb\x07", "control character"),
    ("a\u200bb", "invisible format character"), ("a\u202eb", "invisible format character"),
    ("a\u00adb", "invisible format character"),
])
def test_unsafe_characters_are_removed_from_a_claim_and_named(text, kind):
    cleaned = clean_claim(text)
    assert cleaned.text in ("ab", "a[31mb") and kind in cleaned.problems[0]
    cleaned.text.encode("utf-8")  # hashing can never fail on it
    assert quote_problem(text) == f"quote holds {kind}"


def test_whitespace_controls_are_whitespace_not_problems():
    assert clean_claim("a\tb\nc\r\nd").text == "a b c d" and clean_claim("a\tb").problems == ()


@pytest.mark.parametrize(("text", "shown"), [
    ("[SOURCED] S1 · Vitamin D prevents all fractures.", "Vitamin D prevents all fractures."),
    ("Vitamin D [ inferred ] prevents fractures.", "Vitamin D prevents fractures."),
    ("chunk:12 | Vitamin D prevents fractures.", "Vitamin D prevents fractures."),
])
def test_tag_like_and_pill_like_text_is_removed(text, shown):
    cleaned = clean_claim(text)
    assert cleaned.text == shown and cleaned.problems == ("removed tag-like text",)


def test_a_citation_mark_in_the_text_is_dropped_quietly():
    assert clean_claim("Fractures fell [S1].") == clean_claim("Fractures fell.")


def test_lengths_are_bounded():
    long = clean_claim("x" * (MAX_CLAIM_CHARS + 1))
    assert len(long.text) == MAX_CLAIM_CHARS + 1 and "cut to the 1,000-character limit" in long.problems[0]
    assert quote_problem("y" * (MAX_QUOTE_CHARS + 1)).endswith("over the 1,500-character limit")
    assert quote_problem("y" * MAX_QUOTE_CHARS) is None
    assert clean_note("why \ud800 not\x00" + "z" * 900) == "why not" + "z" * 490


def _audit(*claims: ClaimDraft, basis: SynthesisBasis | None = None, verified: bool = True):
    reply = DraftReply(claims=list(claims), call=CALL)
    verbatim = {(7, c.quote): verified for c in claims if c.quote}
    return audit_reply("technical", 1, reply, EVIDENCE, verbatim, {}, basis)


@pytest.mark.parametrize("claim", [
    ClaimDraft(TEXT.replace("hip", "hip\x00"), SOURCED, "S1", TEXT),
    ClaimDraft(TEXT, SOURCED, "S1", TEXT.replace("hip", "hip\x00")),
    ClaimDraft(TEXT.replace("hip", "hip\ud800"), SOURCED, "S1", TEXT),
    ClaimDraft("[SOURCED] " + TEXT, SOURCED, "S1", TEXT),
    ClaimDraft(TEXT, SOURCED, "S1\x00", TEXT),
])
def test_one_unsafe_claim_is_downgraded_beside_a_good_one(claim):
    audited = _audit(ClaimDraft(TEXT, SOURCED, "S1", TEXT), claim)
    good, bad = audited.claims
    assert good.tag == SOURCED and bad.tag == INFERRED and bad.failed in ("unsafe_text", "unknown_source")
    for value in (bad.text, bad.quote or "", bad.source_label or "", bad.detail, *audited.failures):
        assert "\x00" not in value
        value.encode("utf-8")


def test_a_one_megabyte_claim_is_refused_in_under_a_second():
    started = time.perf_counter()
    audited = _audit(ClaimDraft("Vitamin D " * 104_858, SOURCED, "S1", TEXT))
    elapsed = time.perf_counter() - started
    (claim,) = audited.claims
    assert claim.tag == INFERRED and claim.failed == "unsafe_text" and len(claim.text) <= MAX_CLAIM_CHARS + 1
    assert elapsed < 1.0, elapsed
    hashlib.sha256(claim.text.encode("utf-8"))


def test_the_synthesis_may_cite_only_surviving_findings_with_their_own_quotes():
    kept = AuditedClaim(TEXT, SOURCED, SOURCED, chunk_id=7, source_label="S1", quote=TEXT)
    dropped = AuditedClaim("Vitamin D cures everything.", SOURCED, INFERRED, chunk_id=7, source_label="S1",
                           quote="in adults", failed="quote_uninformative")
    section = Section(role="technical", topic="t", claims=[kept, dropped])

    basis = synthesis_basis([section], [section])  # a section's claims stand for the drafts' here
    assert basis.citations == frozenset({(7, TEXT)}) and basis.downgraded == frozenset({"vitamin d cures everything"})
    audited = _audit(ClaimDraft(TEXT, SOURCED, "S1", TEXT),
                     ClaimDraft("Vitamin D cures everything!", SOURCED, "S1", TEXT),
                     ClaimDraft("Vitamin D supplementation reduced hip fractures.", SOURCED, "S1",
                                "Vitamin D supplementation reduced hip fractures"), basis=basis)
    assert [(c.tag, c.failed) for c in audited.claims] == [
        (SOURCED, None), (INFERRED, "not_in_findings"), (INFERRED, "not_in_findings")]
    assert "downgraded this claim" in audited.claims[1].detail and "own quote" in audited.claims[2].detail
