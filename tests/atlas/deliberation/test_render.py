"""Rendering a stored brief: text, Markdown, one self-contained HTML page, JSON."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest

from forum_atlas.deliberation.model import (
    INFERRED,
    SOURCED,
    AuditSummary,
    BriefView,
    CitationView,
    ClaimView,
    SectionView,
    insufficient_evidence,
)
from forum_atlas.deliberation.quotes import quote_span
from forum_atlas.deliberation.render import render_html, render_json, render_markdown, render_text

SEAL = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

GRID_PASSAGE = ("Article 12 (Connection).\nTransmission system operators shall publish the\n"
                "connection  requirements for new   generating units\twithin six months.  Other text follows.")
GRID_QUOTE = "Transmission system operators shall publish the connection requirements for new generating units"

HOSTILE_TITLE = 'Grid <script>alert("t")</script> & "code" rules'
HOSTILE_QUOTE = 'operators <script>alert(1)</script> & "quoted" must comply'
HOSTILE_PASSAGE = 'Preamble. The\noperators <script>alert(1)</script> &  "quoted" must comply by 2026.'


def citation(cid: int = 11, label: str = "S1", title: str = "Network Code on Requirements for Generators, consolidated 2024 edition",
             quote: str = GRID_QUOTE, passage: str = GRID_PASSAGE, **over) -> CitationView:
    fields = {"citation_id": cid, "label": label, "chunk_id": 100 + cid, "document_id": 7, "document_version": 2,
              "title": title, "source_name": "ENTSO-E", "url": "https://example.org/nc-rfg", "quote": quote,
              "passage": passage, "importance": 5, "quality_score": 4, "recency_label": "weeks",
              "published_at": "2024-05-01T00:00:00+00:00"}
    fields.update(over)
    return CitationView(**fields)


def sourced(text: str, cit: CitationView) -> ClaimView:
    return ClaimView(text=text, tag=SOURCED, claimed_tag=SOURCED, verdict="supports", citation=cit)


def inferred(text: str) -> ClaimView:
    return ClaimView(text=text, tag=INFERRED, claimed_tag=INFERRED)


DOWNGRADED = ClaimView(text="Operators must connect within one month.", tag=INFERRED, claimed_tag=SOURCED,
                       failed="quote_not_verbatim", detail="the quote 'within one month' is not in S3",
                       citation=citation(cid=13, label="S3", quote="within one month"))


def view(**over) -> BriefView:
    c1 = citation()
    c2 = citation(cid=12, label="S2", title="Tariff methodology", source_name="ACER", quality_score=5, importance=3,
                  recency_label="just_now", published_at=None, url=None,
                  quote="Tariffs are reviewed every four years.",
                  passage="Scope.\n\nTariffs are reviewed\nevery four years.\nExceptions apply.")
    brief = BriefView(
        brief_id=42,
        question="What must grid operators publish about connection requirements?",
        created_at="2025-03-01T12:00:00+00:00",
        synthesis=SectionView(role="coordinator", topic="overall answer", claims=(
            sourced("Operators publish connection requirements.", c1),
            inferred("Taken together, publication precedes any tariff review."))),
        sections=(
            SectionView(role="legal_regulatory", topic="connection rules", claims=(
                sourced("TSOs must publish connection requirements for new units.", c1), DOWNGRADED)),
            SectionView(role="financial", topic="tariff reviews", claims=(
                sourced("Tariffs are reviewed every four years.", c2),), attempts=2),
            SectionView(role="geospatial", topic="siting constraints", claims=(), attempts=2,
                        insufficient="no retrieved passage addresses siting; the retry failed validation again"),
        ),
        audit=AuditSummary(sourced_verified=3, inferred=2, downgraded=1, retried=2, insufficient_sections=1,
                           sourced_claimed=5),
        engines={"drafting": "offline-extractive 1.0", "support": "rule-based 1.0"},
        extractive=False,
        snapshot_id=7,
        seal=SEAL,
        redactions=0,
        flow_run_id="run-abc",
    )
    return replace(brief, **over)


# --- text and Markdown -----------------------------------------------------------------------------

@pytest.mark.parametrize("render", [render_text, render_markdown])
def test_layout_has_title_sections_and_audit(render):
    out = render(view())
    assert "Brief #42" in out and "What must grid operators publish about connection requirements?" in out
    assert "offline-extractive 1.0" in out and "rule-based 1.0" in out
    # synthesis first, then each persona in order, then the audit
    order = [out.index(s) for s in ("Synthesis (Coordinator)", "Legal / regulatory — connection rules",
                                    "Financial — tariff reviews", "Geospatial — siting constraints", "Audit summary")]
    assert order == sorted(order)
    assert "engine is extractive" not in out  # not an extractive brief
    assert "personal data" not in out        # nothing was redacted


def test_text_claims_pills_and_quotes():
    out = render_text(view())
    lines = out.splitlines()
    claim = next(i for i, line in enumerate(lines) if "TSOs must publish" in line)
    assert lines[claim].startswith("- [SOURCED] TSOs must publish connection requirements for new units. [S1 · ")
    pill = lines[claim]
    for part in ("S1", "Network Code on Requirements", "ENTSO-E", "quality 4/5", "importance 5/5", "recency: weeks"):
        assert part in pill
    assert "…" in pill and "consolidated 2024 edition" not in pill  # the long title is shortened
    assert lines[claim + 1].strip() == f"“{GRID_QUOTE}”"
    assert "recency: just now" in out and "quality 5/5" in out
    assert "- [INFERRED] Taken together, publication precedes any tariff review." in lines
    # one claim per bullet
    assert sum(line.startswith("- ") for line in lines) == 5


@pytest.mark.parametrize("render", [render_text, render_markdown])
def test_downgraded_claim_says_what_failed(render):
    out = render(view())
    line = next(line for line in out.splitlines() if "within one month" in line)
    assert "[INFERRED]" in line and "[SOURCED]" not in line
    assert "downgraded: quote not found verbatim in S3" in line


@pytest.mark.parametrize("render", [render_text, render_markdown])
def test_insufficient_section_renders_the_sentence_and_reason(render):
    out = render(view())
    lines = out.splitlines()
    assert insufficient_evidence("siting constraints") in lines  # exactly, on its own line
    assert "no retrieved passage addresses siting" in out and "after 2 attempts" in out


def test_audit_numbers_and_snapshot_in_text():
    out = render_text(view())
    audit = out[out.index("Audit summary"):]
    assert re.search(r"verified \[SOURCED\]\s+3\s+\(of 5 written as \[SOURCED\]\)", audit)
    assert re.search(r"^\s*\[INFERRED\]\s+2$", audit, re.MULTILINE)
    assert re.search(r"downgraded\s+1", audit) and re.search(r"retried\s+2", audit)
    assert re.search(r"insufficient sections\s+1", audit)
    assert "Evidence snapshot #7" in audit and SEAL[:16] in audit and SEAL[:17] not in audit
    assert "atlas verify 42" in audit


def test_markdown_audit_is_a_table_and_user_text_is_escaped():
    hostile = citation(title="A *bold* [link](http://x) <b>t</b>", quote="x_y * z")
    out = render_markdown(view(synthesis=SectionView(role="coordinator", topic="t", claims=(sourced("c", hostile),))))
    assert "| verified `[SOURCED]` | 3 |" in out and "| downgraded | 1 |" in out
    assert "`[SOURCED]`" in out and "`atlas verify 42`" in out
    assert r"A \*bold\* \[link\](http://x) \<b\>t\</b\>" in out
    assert r"“x\_y \* z”" in out
    assert "<b>" not in out


@pytest.mark.parametrize("render", [render_text, render_markdown, render_html])
def test_extractive_brief_says_so(render):
    out = render(view(extractive=True))
    assert "The offline engine is extractive" in out
    assert "copied from a retrieved passage" in out and "no model wrote any text" in out


@pytest.mark.parametrize("render", [render_text, render_markdown, render_html])
def test_redactions_are_counted(render):
    assert "2 pieces of personal data were removed from the question before any provider saw it" in render(
        view(redactions=2, question="Can [EMAIL] ask about [PHONE]?"))
    assert "1 piece of personal data was removed" in render(view(redactions=1))


def test_other_downgrade_notes():
    from forum_atlas.deliberation.render import downgrade_note
    base = replace(DOWNGRADED, failed="not_retrieved")
    assert downgrade_note(base) == "downgraded: S3 was not in this round's retrieved set"
    assert downgrade_note(replace(DOWNGRADED, failed="contradicts")) == "downgraded: S3 contradicts the claim"
    assert downgrade_note(replace(DOWNGRADED, failed="no_quote", citation=None)) == "downgraded: no verbatim quote was given"
    no_cite = replace(DOWNGRADED, failed="unknown_source", citation=None, detail="cites S9, which was never retrieved")
    assert downgrade_note(no_cite) == "downgraded: cites S9, which was never retrieved"


# --- HTML ------------------------------------------------------------------------------------------

class _Page(HTMLParser):
    VOID = frozenset({"meta", "br", "img", "hr", "link", "input"})

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: list[str] = []
        self.links: list[str] = []
        self.headings: list[int] = []
        self.marks: list[str] = []
        self.tags: list[str] = []
        self.html_attrs: dict = {}
        self._mark: list[str] | None = None
        self.passage_texts: dict[str, str] = {}
        self._passage: str | None = None
        self._article: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "html":
            self.html_attrs = a
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))
        if tag == "article":
            self._article = a.get("id")
        if tag == "blockquote" and self._article:
            self._passage = self._article
            self.passage_texts[self._passage] = ""
        if tag == "mark":
            self._mark = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()
        if tag == "mark":
            self.marks.append("".join(self._mark or []))
            self._mark = None
        if tag == "blockquote":
            self._passage = None

    def handle_data(self, data):
        if self._mark is not None:
            self._mark.append(data)
        if self._passage:
            self.passage_texts[self._passage] += data


def parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    assert not p.errors, p.errors
    assert not p.stack, f"unclosed: {p.stack}"
    return p


def test_html_is_one_wellformed_self_contained_page():
    page = render_html(view(extractive=True, redactions=1))
    p = parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert p.html_attrs.get("lang") == "en" and '<meta charset="utf-8">' in page
    assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags
    assert not re.search(r"(src|href)=\"(https?:)?//", page.replace('href="https://example.org/nc-rfg"', ""))
    assert "@import" not in page and "url(" not in page
    # headings in order: one h1, then h2s, h3s only under the passages
    assert p.headings[0] == 1 and p.headings.count(1) == 1
    assert all(b - a <= 1 for a, b in zip(p.headings, p.headings[1:]))
    assert len(p.ids) == len(set(p.ids))


def test_html_pills_link_to_passages_with_hover_facts():
    page = render_html(view())
    p = parse(page)
    pill_links = [h for h in p.links if h.startswith("#passage-")]
    assert sorted(set(pill_links)) == ["#passage-11", "#passage-12"]
    assert pill_links.count("#passage-11") == 2  # synthesis and legal cite the same row
    for href in pill_links:
        assert href[1:] in p.ids
    # every passage anchor links back to a claim that exists
    for href in (h for h in p.links if h.startswith("#claim-")):
        assert href[1:] in p.ids
    pill = re.search(r'<a class="pill" href="#passage-12" title="([^"]*)">', page).group(1)
    for fact in ("Source: ACER", "Quality: 5/5", "Importance: 3/5", "Recency: just now", "Published: undated"):
        assert fact in pill
    assert 'class="tip" role="tooltip"' in page and ".pill:hover .tip" in page
    assert "Published</dt><dd>2024-05-01</dd>" in page


def test_html_marks_exactly_the_quote_despite_different_whitespace():
    v = view()
    p = parse(render_html(v))
    cited = {"passage-11": citation(), "passage-12": v.sections[1].claims[0].citation}
    assert len(p.marks) == len(cited) == len(p.passage_texts)
    for anchor, c in cited.items():
        assert p.passage_texts[anchor] == c.passage           # the original passage text, in full
        start, end = quote_span(c.quote, c.passage)
        assert c.passage[start:end] in p.marks                 # marked with the passage's own whitespace
        assert c.passage[start:end] != c.quote                 # (the fixtures do differ in whitespace)
    for mark in p.marks:
        assert mark == mark.strip()
        assert " ".join(mark.split()) in {" ".join(c.quote.split()) for c in cited.values()}


def test_html_lists_a_passage_once_however_many_claims_cite_it():
    """Every claim has its own citation row: a section's claim and the synthesis repeating it cite one chunk
    through two rows (ids 11 and 14). The page lists the passage once, both pills open it, and a second quote
    from the same passage is marked too."""
    again = citation(cid=14, chunk_id=111, quote="Other text follows.")
    v = view(synthesis=SectionView(role="coordinator", topic="overall answer", claims=(
        sourced("Operators publish connection requirements.", citation()), sourced("Other text follows.", again))))
    page = render_html(v)
    p = parse(page)
    assert page.count('<article class="passage"') == 2 and "passage-14" not in p.ids
    assert [h for h in p.links if h.startswith("#passage-")].count("#passage-11") == 3
    assert p.marks[:2] == ["Transmission system operators shall publish the\nconnection  requirements for new   "
                           "generating units", "Other text follows."]
    assert page.count("Cited by:") == 2 and ">Synthesis</a> · <a" in page


def test_a_passage_held_by_two_sources_says_where_else_it_is():
    copy = citation(also_in=("Library (paper.pdf)",))
    v = view(synthesis=SectionView(role="coordinator", topic="t", claims=(sourced("c", copy),)), sections=())
    assert "also in: Library (paper.pdf)]" in render_text(v)
    page = render_html(v)
    assert "<dt>Also in</dt><dd>Library (paper.pdf)</dd>" in page and "chunk 111 · also in: Library (paper.pdf)" in page
    assert "also in" not in render_text(view())


def test_html_escapes_hostile_titles_and_quotes():
    hostile = citation(cid=21, label="S1", title=HOSTILE_TITLE, quote=HOSTILE_QUOTE, passage=HOSTILE_PASSAGE,
                       source_name='Evil "src" <i>')
    v = view(question="Is <script>alert('q')</script> safe?",
             synthesis=SectionView(role="coordinator", topic="<b>topic</b>",
                                   claims=(sourced("Claim <img src=x onerror=alert(1)>", hostile),)),
             sections=())
    page = render_html(v)
    p = parse(page)
    assert "script" not in p.tags and "img" not in p.tags and "i" not in p.tags
    assert "&lt;b&gt;topic&lt;/b&gt;" in page
    assert "<b>topic</b>" not in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert 'title="Source: Evil &quot;src&quot; &lt;i&gt;' in page
    assert p.marks == ['operators <script>alert(1)</script> &  "quoted" must comply']
    assert p.passage_texts["passage-21"] == HOSTILE_PASSAGE


def test_html_styles_downgrades_insufficient_sections_and_audit_table():
    page = render_html(view())
    parse(page)
    assert '<li class="claim inferred downgraded"' in page
    assert "downgraded: quote not found verbatim in S3" in page
    assert 'title="the quote &#x27;within one month&#x27; is not in S3"' in page
    assert '<section class="section persona insufficient"' in page
    assert f'<p class="insufficient-sentence">{insufficient_evidence("siting constraints")}</p>' in page
    assert ".downgraded{" in page and ".section.insufficient{" in page
    table = page[page.index("<table>"):page.index("</table>")]
    for label, n in (("verified [SOURCED]", 3), ("[INFERRED]", 2), ("downgraded", 1), ("retried", 2),
                     ("insufficient sections", 1)):
        assert f'<th scope="row">{label}</th><td>{n}</td>' in table
    assert f"<code>{SEAL[:16]}</code>" in page and "<code>atlas verify 42</code>" in page
    # a downgraded claim's rejected citation is not offered as a passage
    assert "passage-13" not in page


def test_html_passage_whose_quote_cannot_be_located_is_shown_unmarked():
    lost = citation(cid=31, quote="a sentence that is not there", passage="Some other\ntext.")
    page = render_html(view(synthesis=SectionView(role="coordinator", topic="t", claims=(sourced("c", lost),)),
                            sections=()))
    p = parse(page)
    assert p.marks == [] and p.passage_texts["passage-31"] == "Some other\ntext."
    assert "The quoted span was not located in this passage." in page


def test_html_without_citations_has_no_passages_part():
    v = view(synthesis=SectionView(role="coordinator", topic="t", claims=(inferred("Only inference."),)), sections=())
    page = render_html(v)
    parse(page)
    assert "Passages" not in page and "<mark>" not in page


# --- JSON ------------------------------------------------------------------------------------------

def _listify(value):
    if isinstance(value, (list, tuple)):
        return [_listify(v) for v in value]
    if isinstance(value, dict):
        return {k: _listify(v) for k, v in value.items()}
    return value


def test_json_round_trips():
    v = view(extractive=True, redactions=2)
    out = render_json(v)
    assert json.loads(out) == _listify(v.as_dict())
    assert json.loads(out)["sections"][0]["claims"][0]["citation"]["quote"] == GRID_QUOTE

