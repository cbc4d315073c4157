"""The HTML reader on a saved article page: main text kept, navigation, advertising and comments gone."""

import sys

import pytest

from forum_atlas.ingestion.documents import DocumentError, read_document
from forum_atlas.ingestion.documents.html_flat import LXML_MAX_DEPTH, nesting_depth
from tests.support.hostile_files import DEEP_SENTENCES, deep_html, one_line_html

KEPT = ["Tomasz Wierzbicki", "a single composite sample stands in for roughly forty-two thousand residents",
        "pepper mild mottle virus marker", "Dr. Henrik Vasquez-Mbeki",
        "\"Viruses do not stop at the town boundary,\" she said"]
GONE = ["biscuit-tin cookie policy", "Accept all cookies", "Fearless local news since 1871", "Subscribe for 1 dollar",
        "Rowing and Rugby", "Tide Tables and Weather", "Council Chamber", "Marlowe's Mattress Warehouse",
        "Quayside Motors", "Harbour Light Opticians", "Grandma Ingrid's Herring Pickles", "LEDGERFISH",
        "Email this story to a friend", "Otters return to the mill pond", "Seagull steals", "corrections desk",
        "GullWatcher77", "MarjorieFromTheMillRoad", "potholes on Anchor Lane", "Join the conversation",
        "old customs house", "Advertise with us"]


def test_article_main_text_is_kept_and_boilerplate_is_gone(fixtures_dir):
    page = read_document(fixtures_dir / "article.html")
    assert page.kind == "html" and page.reader == "trafilatura"
    assert page.title == "Town Sewers Become an Early Warning System for Winter Flu"
    assert page.authors == ["Priya Okonkwo-Lindqvist"] and page.published_at.date().isoformat() == "2025-11-18"
    for phrase in KEPT:
        assert phrase in page.text, phrase
    for phrase in GONE:
        assert phrase not in page.text, phrase
    assert "normalise every result against the pepper mild mottle virus marker" in page.text   # a list item
    assert [s.title for s in page.sections] == ["How the sampling works", "Eleven days of warning",
                                                "Privacy, cost and what comes next"]
    assert all(page.text.startswith(s.title, s.start) for s in page.sections)
    assert "page_starts" not in page.metadata("article.html")   # a web page has no pages to cite


def test_content_decides_the_reader_not_the_name(fixtures_dir, tmp_path):
    renamed = tmp_path / "saved-page.txt"
    renamed.write_bytes((fixtures_dir / "article.html").read_bytes())
    assert read_document(renamed).kind == "html"


def test_a_missing_html_reader_names_the_package(fixtures_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "trafilatura", None)   # as if a broken environment lacked it
    with pytest.raises(DocumentError, match=r"need trafilatura, .*pip install forum-atlas") as missing:
        read_document(fixtures_dir / "article.html")
    assert missing.value.kind == "reader_missing"


def test_a_page_nested_100k_levels_deep_keeps_its_sentences(tmp_path):
    """lxml stops at 256 levels and trafilatura then found "no main text": such a page is read flat instead."""
    page = read_document(deep_html(tmp_path / "deep.html", 100_000))
    assert page.reader == "html.parser" and page.title == "Deep page"
    assert page.text.split("\n\n") == DEEP_SENTENCES


def test_a_shallow_page_is_still_read_by_trafilatura(tmp_path):
    page = read_document(deep_html(tmp_path / "shallow.html", 100))
    assert page.reader == "trafilatura" and all(sentence in page.text for sentence in DEEP_SENTENCES)


def test_nesting_depth_follows_closing_tags():
    assert nesting_depth(b"<html><body><div><p>a<p>b</div><div><br><img/></div></body></html>") == 0
    assert nesting_depth(b"<div>" * 10) == 10 and nesting_depth(b"<div>" * 10_000) == LXML_MAX_DEPTH + 1


def test_a_one_line_page_above_the_parser_limit_is_too_large_not_empty(tmp_path):
    page = one_line_html(tmp_path / "line.html", 50 * 1024 * 1024)
    with pytest.raises(DocumentError, match="size limit for an HTML page") as refused:
        read_document(page)
    assert refused.value.kind == "too_large"
