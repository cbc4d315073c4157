"""The whole-word verbatim rule (sql/080, issue 22) on the real database: the same answers as Python
over every code point and on tricky quotes; briefs sealed under the substring rule before it still
verify, under the rule that sealed them, with the current rule's view as a note."""

from __future__ import annotations

from dataclasses import replace

import psycopg
import pytest

from forum_atlas.config import Settings
from forum_atlas.deliberation.audit import AUDIT_RULES
from forum_atlas.deliberation.grounding import GROUNDING_RULES
from forum_atlas.deliberation.quotes import (
    NON_WORD_RANGES,
    SUBSTRING_V1,
    WHOLE_WORDS_V2,
    is_word_char,
    quote_in_passage,
)
from forum_atlas.deliberation.verify import verify_report
from forum_atlas.store import migrations
from forum_atlas.store.briefs import BriefRefused, persist_brief, stored_brief, verbatim_matches
from forum_atlas.store.db import Database
from tests.store.test_briefs import _chunks, make_record
from tests.support.corpus import ingest, record

STORAGE = ("Grid storage capacity doubled in 2024.\nThe regulator, Ofgem, approved the\u00a0cap-and-floor regime "
           "for interconnectors.\tIt said “no further review” was needed.")
PRICES = "Battery pack prices fell by 20 percent in 2023.  Analysts expect further declines — “soon”."


def test_word_characters_agree_with_python_on_every_code_point(db):
    with db.connection() as conn:
        rows = conn.execute("""SELECT cp FROM generate_series(1, 1114111) cp
                                WHERE cp NOT BETWEEN 55296 AND 57343 AND NOT forum.is_word_char(chr(cp))""").fetchall()
    database = {r["cp"] for r in rows}
    python = {cp for cp in range(1, 0x110000) if not 0xD800 <= cp <= 0xDFFF and not is_word_char(chr(cp))}
    assert database == python
    assert len(database) == sum(end - start + 1 for start, end in NON_WORD_RANGES)


SUBWORD = "Statin use was unrelated to breast cancer risks in 25 mg/day users (naïve cohort); its risk—small."


@pytest.mark.parametrize(("quote", "expected"), [
    ("related to breast cancer risks", False),          # starts inside "unrelated"
    ("unrelated to breast cancer risk", False),         # ends inside "risks"
    ("unrelated to breast cancer risks", True),
    ("5 mg/day", False), ("25 mg/day", True), ("mg/day users", True),
    ("aïve cohort", False), ("naïve cohort);", True),
    ("risk", True),                                      # "risks" is no match, but "its risk—small" is
    ("small.", True), ("mall.", False),
    ("(naïve", True), ("—small", True),                  # punctuation at an end needs no boundary
    ("S", False), ("Statin", True), (".", True),
])
def test_sql_and_python_agree_on_word_boundaries(db, quote, expected):
    ingest(db, [record("subword", SUBWORD, title="Statins")])
    chunk = _chunks(db)["subword"]
    with db.connection() as conn:
        (sql,) = verbatim_matches(conn, [(chunk["chunk_id"], quote)])
        old = conn.execute("SELECT forum.citation_verbatim_matches_v1(%s, %s) AS ok",
                           (chunk["chunk_id"], quote)).fetchone()["ok"]
    assert sql is expected is quote_in_passage(quote, chunk["body"])
    assert old is quote_in_passage(quote, chunk["body"], SUBSTRING_V1) is True  # all are substrings


@pytest.fixture
def database_before_080(empty_database_url, tmp_path):
    """A database migrated as it was before issue 22 (every migration before 080)."""
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        migrations.apply_pending(conn, before=80)
    database = Database.open(Settings(database_url=empty_database_url, data_dir=tmp_path, embedder="hashed"),
                             migrate=False)
    yield database, empty_database_url
    database.close()


def test_a_brief_sealed_under_the_substring_rule_still_verifies_and_says_so(database_before_080):
    db, url = database_before_080
    ingest(db, [record("storage", STORAGE, title="Storage outlook"), record("prices", PRICES, title="Battery prices")])
    corpus = _chunks(db)
    old = persist_brief(db, make_record(corpus, synthesis_quote="ell by 20 percent in 2023."))  # inside "fell"

    with psycopg.connect(url, autocommit=True) as conn:
        assert migrations.apply_pending(conn)[0] == "080_whole_word_verbatim.sql"
    report = verify_report(stored_brief(db, old.brief_id))
    assert report.problems == [] and report.rule == SUBSTRING_V1 and report.grounding == ""
    (note,) = report.notes
    assert "only inside a word" in note and WHOLE_WORDS_V2 in note

    with pytest.raises(BriefRefused, match="verbatim"):  # the same citation is refused today
        persist_brief(db, make_record(corpus, synthesis_quote="ell by 20 percent in 2023."))
    current = make_record(corpus, synthesis_quote="fell by 20 percent in 2023.")
    new = persist_brief(db, replace(current, engines={**current.engines, "audit": AUDIT_RULES}))
    report = verify_report(stored_brief(db, new.brief_id))
    assert report.problems == [] and report.rule == WHOLE_WORDS_V2 and report.notes == []
    assert report.grounding == GROUNDING_RULES == "grounding-v2"
    # a brief audited under the rules before issue 35 still verifies, and says so
    older = persist_brief(db, replace(current, engines={**current.engines, "audit": "whole-words-v2 grounding-v1"}))
    report = verify_report(stored_brief(db, older.brief_id))
    assert report.problems == [] and report.rule == WHOLE_WORDS_V2 and report.grounding == "grounding-v1"
