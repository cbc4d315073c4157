"""Render a stored brief (a `BriefView`, as `store.briefs.load_brief` reads it back) for people.

- `render_text` — the terminal;
- `render_markdown` — the Prefect markdown artifact;
- `render_html` — one self-contained page (inline CSS, no scripts, no external assets) whose source
  pills open the passage behind each citation with the quoted span highlighted;
- `render_json` — the view as JSON.

Text and Markdown share one layout (`_lines`) and differ only in a `_Flavor` (headings, escaping,
how a tag, a pill and a quote are written). Every string that came from a source, an engine or the
user is escaped for its target: Markdown punctuation in Markdown, `html.escape` in HTML.
Plain Python: no Prefect, no database driver.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from forum_atlas.ingestion.documents.model import format_pages

from .model import (
    COORDINATOR,
    INFERRED,
    ROLE_TITLES,
    SOURCED,
    BriefView,
    CitationView,
    ClaimView,
    SectionView,
    WithheldView,
    insufficient_evidence,
)
from .quotes import quote_span

__all__ = ["downgrade_note", "render_html", "render_json", "render_markdown", "render_text"]

TITLE_MAX = 60
SEAL_SHOWN = 16

_RECENCY = {"just_now": "just now"}


# --- words shared by every format ----------------------------------------------------------------

def _flat(text: str | None) -> str:
    """One line: runs of whitespace (newlines included) become one space."""
    return " ".join((text or "").split())


def _shorten(text: str, limit: int = TITLE_MAX) -> str:
    text = _flat(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:.-–—") + "…"


def _role_title(role: str) -> str:
    return ROLE_TITLES.get(role) or role.replace("_", " ").capitalize()


def _section_heading(section: SectionView) -> str:
    if section.role == COORDINATOR:
        return f"Synthesis ({_role_title(section.role)})" + (f" — {_flat(section.topic)}" if _flat(section.topic) else "")
    return f"{_role_title(section.role)} — {_flat(section.topic)}"


def _recency(label: str) -> str:
    return "recency: " + _RECENCY.get(label, label.replace("_", " "))


def _also_in(citation: CitationView) -> str:
    """"also in: Library (paper.pdf)" when other sources held the identical passage, else ""."""
    return "also in: " + "; ".join(_flat(c) for c in citation.also_in) if citation.also_in else ""


def _pill_facts(citation: CitationView) -> list[str]:
    """What a pill says after its label and title: source, quality, importance, recency, other copies."""
    facts = [_flat(citation.source_name), f"quality {citation.quality_score}/5",
             f"importance {citation.importance}/5", _recency(citation.recency_label)]
    return facts + ([_also_in(citation)] if citation.also_in else [])


def _published(published_at: str | None) -> str:
    """The date of an ISO date-time ("2024-05-01T00:00:00+00:00" -> "2024-05-01"), or "undated"."""
    text = _flat(published_at)
    return text[:10] if re.match(r"\d{4}-\d{2}-\d{2}", text) else (text or "undated")


def _seal(seal: str) -> str:
    return seal.split(":")[-1][:SEAL_SHOWN]


def downgrade_note(claim: ClaimView) -> str:
    """A short note on the check a downgraded claim failed, e.g.
    "downgraded: quote not found verbatim in S3"."""
    label = claim.citation.label if claim.citation else None
    where = label or "the cited source"
    notes = {
        "no_quote": "no verbatim quote was given",
        "unknown_source": f"{label} is not a known source" if label else "the cited source is unknown",
        "not_retrieved": f"{where} was not in this round's retrieved set",
        "quote_not_verbatim": f"quote not found verbatim in {where}",
        "contradicts": f"{where} contradicts the claim",
        "contextual": f"{where} is context only; it does not support the claim",
    }
    if claim.failed in notes and (label or claim.failed == "no_quote" or not claim.detail):
        return "downgraded: " + notes[claim.failed]
    return "downgraded: " + (_flat(claim.detail) or notes.get(claim.failed or "", "the audit did not verify it"))


def _redaction_sentence(count: int) -> str:
    if count == 1:
        return "1 piece of personal data was removed from the question before any provider saw it."
    return f"{count} pieces of personal data were removed from the question before any provider saw it."


def _gathered_sentence(view: BriefView) -> str:
    return f"Evidence gathered first (evidence run {view.evidence_run_id}): " + " · ".join(view.gathered) + "."


WITHHELD_INTRO = "Retrieval would have matched these records, but they may not be cited:"


def _withheld_line(w: WithheldView) -> str:
    return f"{_shorten(w.title)} ({w.record_key}, from {w.source}): {_flat(w.reason)}"


EXTRACTIVE_STATEMENT = (
    "The offline engine is extractive: every {sourced} claim is a sentence copied from a retrieved "
    "passage, connective statements are marked {inferred}, and no model wrote any text.")


SELF_VERIFIED_STATEMENT = (
    "The support verifier was the model that drafted the claims: it checked its own claims "
    "(allowed by ATLAS_ALLOW_SELF_VERIFICATION).")


def _engines_line(view: BriefView) -> str:
    if not view.engines:
        return "Engines: not recorded"
    return "Engines: " + " · ".join(f"{role} {_flat(name)}" for role, name in view.engines.items())


def _sections(view: BriefView) -> list[SectionView]:
    return [view.synthesis, *view.sections]


def _audit_rows(view: BriefView) -> list[tuple[str, int, str]]:
    a = view.audit
    return [
        ("verified [SOURCED]", a.sourced_verified, f"of {a.sourced_claimed} written as [SOURCED]"),
        ("[INFERRED]", a.inferred, ""),
        ("downgraded", a.downgraded, "[SOURCED] rewritten to [INFERRED]"),
        ("retried", a.retried, "sections retried with a stricter prompt"),
        ("insufficient sections", a.insufficient_sections, ""),
        *((f"downgraded: {reason}", n, DOWNGRADE_REASONS.get(reason, "")) for reason, n in sorted(a.reasons.items())),
    ]


# What each downgrade reason (FailedCheck) means, for the audit table.
DOWNGRADE_REASONS = {
    "unsafe_text": "the model's text held unsafe characters, tag-like text or was over the length limit",
    "no_quote": "no quote", "unknown_source": "cited no passage", "not_retrieved": "cited a passage not retrieved",
    "quote_not_verbatim": "quote not found verbatim (whole words)",
    "not_in_findings": "synthesis cited something the audited findings do not hold",
    "quote_uninformative": "quote too short to carry a claim",
    "claim_not_covered": "claim says more than its quote's sentence",
    "direction_clash": "claim reverses a direction of its source",
    "negation_clash": "claim and source disagree on a negation",
    "contradicts": "the verifier reads the passage as contradicting the claim",
    "contextual": "the verifier reads the passage as context only",
}


def _attempts_note(section: SectionView) -> str:
    return f" (after {section.attempts} attempts)" if section.attempts > 1 else ""


# --- text and Markdown ---------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~&!])")


@dataclass(frozen=True)
class _Flavor:
    markdown: bool

    def esc(self, text: str | None) -> str:
        text = _flat(text)
        return _MD_SPECIAL.sub(r"\\\1", text) if self.markdown else text

    def esc_tags(self, text: str) -> str:
        """Escape, then write the tags [SOURCED] and [INFERRED] as tags."""
        out = self.esc(text)
        for tag in (SOURCED, INFERRED):
            out = out.replace(self.esc(f"[{tag}]"), self.tag(tag))
        return out

    def heading(self, level: int, text: str) -> list[str]:
        if self.markdown:
            return ["#" * level + " " + text, ""]
        return [text, ("=" if level == 1 else "-") * len(text), ""]

    def tag(self, tag: str) -> str:
        return f"`[{tag}]`" if self.markdown else f"[{tag}]"

    def pill(self, citation: CitationView) -> str:
        facts = " · ".join(self.esc(f) for f in _pill_facts(citation))
        label, title = self.esc(citation.label), self.esc(_shorten(citation.title))
        pages = format_pages(citation.first_page, citation.last_page)
        title += f" · {self.esc(pages)}" if pages else ""
        if self.markdown:
            return f"(**{label}** · {title} · {facts})"
        return f"[{label} · {title} · {facts}]"

    def quote_line(self, quote: str) -> str:
        return f"  > “{self.esc(quote)}”" if self.markdown else f"    “{self.esc(quote)}”"

    def note(self, text: str) -> str:
        return f"*({self.esc(text)})*" if self.markdown else f"({text})"

    def code(self, text: str) -> str:
        return f"`{text}`" if self.markdown else text

    def audit_table(self, rows: list[tuple[str, int, str]]) -> list[str]:
        if self.markdown:
            out = ["| | count | |", "|---|---:|---|"]
            out += [f"| {self.esc_tags(label)} | {n} | {self.esc_tags(what)} |" for label, n, what in rows]
            return out + [""]
        width = max(len(label) for label, _, _ in rows)
        return [f"  {label:<{width}}  {n:>4}" + (f"  ({what})" if what else "") for label, n, what in rows] + [""]


def _claim_lines(claim: ClaimView, f: _Flavor) -> list[str]:
    text = f.esc(claim.text)
    if claim.tag == SOURCED:
        if claim.citation is None:
            return [f"- {f.tag(SOURCED)} {text} {f.note('citation missing from the stored brief')}"]
        return [f"- {f.tag(SOURCED)} {text} {f.pill(claim.citation)}", f.quote_line(claim.citation.quote)]
    if claim.claimed_tag == SOURCED:
        return [f"- {f.tag(INFERRED)} {text} {f.note(downgrade_note(claim))}"]
    return [f"- {f.tag(INFERRED)} {text}"]


def _section_lines(section: SectionView, f: _Flavor) -> list[str]:
    out = f.heading(2, f.esc(_section_heading(section)))
    if section.insufficient is not None:
        out.append(f.esc(insufficient_evidence(section.topic)))
        out.append("")
        out.append(f"Reason: {f.esc(section.insufficient) or 'not recorded'}{_attempts_note(section)}")
        return out + [""]
    if section.attempts > 1:
        out += [f.note(f"retried: passed on attempt {section.attempts}, with a stricter prompt"), ""]
    if not section.claims:
        out.append(f.note("no claims"))
    for claim in section.claims:
        out += _claim_lines(claim, f)
    return out + [""]


def _lines(view: BriefView, f: _Flavor) -> Iterator[str]:
    yield from f.heading(1, f"Brief #{view.brief_id}: {f.esc(view.question)}")
    meta = f"Created {f.esc(view.created_at)}"
    if view.flow_run_id:
        meta += f" · flow run {f.code(f.esc(view.flow_run_id))}"
    yield meta
    yield ""
    yield f.esc(_engines_line(view))
    yield ""
    if view.extractive:
        yield EXTRACTIVE_STATEMENT.format(sourced=f.tag(SOURCED), inferred=f.tag(INFERRED))
        yield ""
    if view.audit.self_verified:
        yield f.esc(SELF_VERIFIED_STATEMENT)
        yield ""
    if view.redactions:
        yield f.esc(_redaction_sentence(view.redactions))
        yield ""
    if view.evidence_run_id is not None:
        yield f.esc(_gathered_sentence(view))
        yield ""
    for section in _sections(view):
        yield from _section_lines(section, f)
    if view.withheld:
        yield from f.heading(2, "Sources withheld")
        yield f.esc(WITHHELD_INTRO)
        yield ""
        yield from (f"- {f.esc(_withheld_line(w))}" for w in view.withheld)
        yield ""
    yield from f.heading(2, "Audit summary")
    yield from f.audit_table(_audit_rows(view))
    yield f"Evidence snapshot #{view.snapshot_id} · seal {f.code(_seal(view.seal))}"
    yield ""
    yield f"Check it: {f.code(f'atlas verify {view.brief_id}')}"


def _join(lines: Iterator[str]) -> str:
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_text(view: BriefView) -> str:
    """The brief for a terminal: plain text, one claim per bullet."""
    return _join(_lines(view, _Flavor(markdown=False)))


def render_markdown(view: BriefView) -> str:
    """The brief as Markdown (the Prefect artifact): same layout as the text, escaped."""
    return _join(_lines(view, _Flavor(markdown=True)))


# --- JSON ----------------------------------------------------------------------------------------

def render_json(view: BriefView) -> str:
    return json.dumps(view.as_dict(), indent=2, ensure_ascii=False, default=str)


# --- HTML ----------------------------------------------------------------------------------------

def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _cited(view: BriefView) -> list[tuple[str, str, CitationView]]:
    """(claim anchor, section name, citation) for every verified [SOURCED] claim, in reading order."""
    out = []
    for s_index, section in enumerate(_sections(view)):
        if section.insufficient is not None:
            continue
        for c_index, claim in enumerate(section.claims):
            if claim.tag == SOURCED and claim.citation is not None:
                name = "Synthesis" if section.role == COORDINATOR else _role_title(section.role)
                out.append((f"claim-{s_index}-{c_index}", name, claim.citation))
    return out


def _tooltip_facts(c: CitationView) -> list[tuple[str, str]]:
    facts = [("Source", _flat(c.source_name)), *_place_facts(c), ("Quality", f"{c.quality_score}/5"),
             ("Importance", f"{c.importance}/5"), ("Recency", _RECENCY.get(c.recency_label, c.recency_label)),
             ("Published", _published(c.published_at))]
    return facts + ([("Also in", "; ".join(_flat(x) for x in c.also_in))] if c.also_in else [])


def _place_facts(c: CitationView) -> list[tuple[str, str]]:
    """Where the passage is in its file: pages, section, file (what the file has of them)."""
    place = [("Pages", format_pages(c.first_page, c.last_page)), ("Section", _flat(c.section)), ("File", _flat(c.file))]
    return [(k, v) for k, v in place if v]


def _pages_suffix(c: CitationView) -> str:
    pages = format_pages(c.first_page, c.last_page)
    return f" · {pages}" if pages else ""


def _html_pill(c: CitationView, anchor: str) -> str:
    facts = _tooltip_facts(c)
    title = " · ".join(f"{k}: {v}" for k, v in facts)
    tip = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    return (f'<a class="pill" href="#{anchor}" title="{_e(title)}">'
            f'<b>{_e(c.label)}</b> {_e(_shorten(c.title, 44))}{_e(_pages_suffix(c))} '
            f'<span class="src">· {_e(_shorten(c.source_name, 24))}</span>'
            f'<span class="tip" role="tooltip"><span class="tip-title">{_e(_flat(c.title))}</span>'
            f"<dl>{tip}</dl></span></a>")


def _html_claim(claim: ClaimView, anchor: str, passages: dict[int, str]) -> str:
    text = f'<span class="claim-text">{_e(_flat(claim.text))}</span>'
    if claim.tag == SOURCED:
        tag = '<span class="tag tag-sourced">[SOURCED]</span>'
        if claim.citation is None:
            return (f'<li class="claim sourced" id="{anchor}">{tag} {text} '
                    '<span class="note">citation missing from the stored brief</span></li>')
        return (f'<li class="claim sourced" id="{anchor}">{tag} {text} '
                f'{_html_pill(claim.citation, passages[claim.citation.chunk_id])}'
                f'<q class="quote">{_e(_flat(claim.citation.quote))}</q></li>')
    tag = '<span class="tag tag-inferred">[INFERRED]</span>'
    if claim.claimed_tag == SOURCED:
        detail = _flat(claim.detail)
        title = f' title="{_e(detail)}"' if detail else ""
        return (f'<li class="claim inferred downgraded" id="{anchor}">{tag} {text} '
                f'<span class="note downgrade-note"{title}>{_e(downgrade_note(claim))}</span></li>')
    return f'<li class="claim inferred" id="{anchor}">{tag} {text}</li>'


def _html_section(section: SectionView, index: int, passages: dict[int, str]) -> str:
    kind = "synthesis" if section.role == COORDINATOR else "persona"
    insufficient = section.insufficient is not None
    classes = f"section {kind}" + (" insufficient" if insufficient else "")
    topic = f' <span class="topic">— {_e(_flat(section.topic))}</span>' if _flat(section.topic) else ""
    heading = (f'Synthesis <span class="role">({_e(_role_title(section.role))})</span>{topic}'
               if section.role == COORDINATOR else f"{_e(_role_title(section.role))}{topic}")
    out = [f'<section class="{classes}" id="section-{index}"><h2>{heading}</h2>']
    if insufficient:
        out.append(f'<p class="insufficient-sentence">{_e(insufficient_evidence(_flat(section.topic)))}</p>')
        out.append(f'<p class="reason">Reason: {_e(_flat(section.insufficient) or "not recorded")}'
                   f"{_e(_attempts_note(section))}</p>")
    else:
        if section.attempts > 1:
            out.append(f'<p class="retried">Retried: passed on attempt {section.attempts}, with a stricter prompt.</p>')
        if section.claims:
            out.append('<ul class="claims">')
            out += [_html_claim(claim, f"claim-{index}-{i}", passages) for i, claim in enumerate(section.claims)]
            out.append("</ul>")
        else:
            out.append('<p class="note">No claims.</p>')
    out.append("</section>")
    return "\n".join(out)


def _marked_passage(passage: str, quotes: list[str]) -> str:
    """The passage with every quoted span marked (claims may quote different sentences of one passage)."""
    spans, end = [], 0
    for start, stop in sorted({span for q in quotes if (span := quote_span(q, passage)) is not None}):
        if start >= end:
            spans.append((start, stop))
            end = stop
    if not spans:
        return (f'<blockquote class="passage-text">{_e(passage)}</blockquote>'
                '<p class="note">The quoted span was not located in this passage.</p>')
    out, position = [], 0
    for start, stop in spans:
        out += [_e(passage[position:start]), f"<mark>{_e(passage[start:stop])}</mark>"]
        position = stop
    return f'<blockquote class="passage-text">{"".join(out)}{_e(passage[position:])}</blockquote>'


def _passage_anchors(cited: list[tuple[str, str, CitationView]]) -> dict[int, str]:
    """Chunk id -> the anchor of its one entry under Passages. Every claim has its own citation row, so a
    passage cited by a section and again by the synthesis has two; it is listed once, as the first."""
    anchors: dict[int, str] = {}
    for _, _, c in cited:
        anchors.setdefault(c.chunk_id, f"passage-{c.citation_id}")
    return anchors


def _html_passages(cited: list[tuple[str, str, CitationView]], anchors: dict[int, str]) -> str:
    if not cited:
        return ""
    by_chunk: dict[int, tuple[CitationView, list[str], list[tuple[str, str]]]] = {}
    for anchor, name, c in cited:
        _, quotes, backs = by_chunk.setdefault(c.chunk_id, (c, [], []))
        quotes.append(c.quote)
        backs.append((anchor, name))
    out = ['<section class="passages" id="passages"><h2>Passages</h2>']
    for chunk_id, (c, quotes, anchors_back) in by_chunk.items():
        source = _e(_flat(c.source_name))
        if c.url:
            source = f'<a href="{_e(c.url)}" rel="noreferrer noopener">{source}</a>'
        place = [_e(f"{k.lower()} {v}" if k != "Pages" else v) for k, v in _place_facts(c)]
        facts = " · ".join([source, *place, f"quality {c.quality_score}/5", f"importance {c.importance}/5",
                            _e(_recency(c.recency_label)), f"published {_e(_published(c.published_at))}",
                            f"document {c.document_id} v{c.document_version}, chunk {c.chunk_id}",
                            *([_e(_also_in(c))] if c.also_in else [])])
        back = " · ".join(f'<a href="#{a}">{_e(name)}</a>' for a, name in anchors_back)
        out.append(f'<article class="passage" id="{anchors[chunk_id]}">'
                   f'<h3><span class="label">{_e(c.label)}</span> {_e(_flat(c.title))}{_e(_pages_suffix(c))}</h3>'
                   f'<p class="facts">{facts}</p>{_marked_passage(c.passage, quotes)}'
                   f'<p class="back">Cited by: {back}</p></article>')
    out.append("</section>")
    return "\n".join(out)


def _html_withheld(view: BriefView) -> str:
    if not view.withheld:
        return ""
    items = "".join(f"<li>{_e(_withheld_line(w))}</li>" for w in view.withheld)
    return f'<section class="withheld"><h2>Sources withheld</h2><p>{_e(WITHHELD_INTRO)}</p><ul>{items}</ul></section>'


def _html_audit(view: BriefView) -> str:
    rows = "".join(f'<tr><th scope="row">{_e(label)}</th><td>{n}</td><td class="what">{_e(what)}</td></tr>'
                   for label, n, what in _audit_rows(view))
    return ('<section class="audit" id="audit"><h2>Audit summary</h2>'
            f'<table><caption class="sr">Audit counts</caption><tbody>{rows}</tbody></table>'
            f'<p class="snapshot">Evidence snapshot #{view.snapshot_id} · seal <code>{_e(_seal(view.seal))}</code>'
            f' · check it with <code>atlas verify {view.brief_id}</code></p></section>')


_CSS = """
:root{--ink:#1d232b;--muted:#5b6673;--line:#dde2e8;--bg:#f6f7f9;--card:#fff;--ok:#0f6b3e;--ok-bg:#e3f4ea;
--inf:#4a4f8a;--inf-bg:#eceefa;--warn:#8a5300;--warn-bg:#fff4dc;--mark:#ffe58a}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:60rem;margin:0 auto;padding:2rem 1.5rem 4rem}
header h1{font-size:1.6rem;line-height:1.3;margin:0 0 .4rem}
header .brief-id{display:block;font-size:.8rem;font-weight:600;letter-spacing:.06em;text-transform:uppercase;color:var(--muted)}
.meta{color:var(--muted);font-size:.9rem;margin:.2rem 0}
.banner{border-left:4px solid var(--inf);background:var(--inf-bg);padding:.6rem .9rem;border-radius:4px;margin:.8rem 0;font-size:.95rem}
.banner.privacy{border-color:var(--ok);background:var(--ok-bg)}
.section,.audit,.passages{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem 1.3rem;margin:1.2rem 0}
.section.synthesis{border-top:4px solid var(--ink)}
h2{font-size:1.2rem;margin:0 0 .6rem}
h2 .topic,h2 .role{font-weight:400;color:var(--muted)}
.claims{list-style:none;margin:0;padding:0}
.claim{padding:.55rem 0;border-top:1px solid var(--line)}
.claim:first-child{border-top:0}
.tag{display:inline-block;font:600 .72rem/1.6 ui-monospace,SFMono-Regular,Menlo,monospace;padding:0 .4rem;border-radius:3px;margin-right:.3rem;vertical-align:1px}
.tag-sourced{color:var(--ok);background:var(--ok-bg)}
.tag-inferred{color:var(--inf);background:var(--inf-bg)}
.pill{position:relative;display:inline-block;font-size:.8rem;line-height:1.5;padding:0 .55rem;margin-left:.2rem;border-radius:999px;
border:1px solid #b9c3cf;background:#f1f4f7;color:var(--ink);text-decoration:none;white-space:nowrap;vertical-align:1px}
.pill b{color:var(--ok)}
.pill .src{color:var(--muted)}
.pill:hover,.pill:focus{background:#e2e8ef;border-color:#8e9aa8}
.pill .tip{display:none;position:absolute;left:0;top:calc(100% + 6px);z-index:10;min-width:17rem;max-width:24rem;white-space:normal;
background:#1d232b;color:#fff;border-radius:6px;padding:.55rem .75rem;font-size:.8rem;box-shadow:0 4px 14px rgba(0,0,0,.2)}
.pill:hover .tip,.pill:focus .tip{display:block}
.tip-title{display:block;font-weight:600;margin-bottom:.3rem}
.tip dl{display:grid;grid-template-columns:auto 1fr;gap:.1rem .7rem;margin:0}
.tip dt{color:#aab4c0}.tip dd{margin:0}
.quote{display:block;margin:.35rem 0 0 .2rem;padding-left:.8rem;border-left:3px solid var(--ok-bg);color:#38414c;font-style:italic}
.quote::before{content:"“"}.quote::after{content:"”"}
.downgraded{background:var(--warn-bg);border-left:4px solid var(--warn);padding-left:.7rem;margin:.2rem 0;border-radius:3px}
.downgrade-note{display:inline-block;color:var(--warn);font-size:.85rem;font-weight:600}
.downgrade-note::before{content:"⚠ "}
.note{color:var(--muted);font-size:.9rem}
.retried{color:var(--warn);font-size:.85rem;margin:0 0 .4rem}
.section.insufficient{background:repeating-linear-gradient(135deg,#fff,#fff 10px,#f8f3e6 10px,#f8f3e6 20px);border-color:#e3cf9d}
.insufficient-sentence{font-weight:600;color:var(--warn);margin:.2rem 0}
.reason{color:var(--muted);margin:.2rem 0;font-size:.92rem}
.audit table{border-collapse:collapse;font-size:.92rem;margin-bottom:.6rem}
.audit th,.audit td{border-bottom:1px solid var(--line);padding:.25rem .8rem .25rem 0;text-align:left}
.audit td{text-align:right;font-variant-numeric:tabular-nums;font-weight:600}
.audit td.what{text-align:left;font-weight:400;color:var(--muted)}
.snapshot{font-size:.9rem}
code{font:.85rem ui-monospace,SFMono-Regular,Menlo,monospace;background:#eef1f4;padding:.05rem .3rem;border-radius:3px}
.passage{border-top:1px solid var(--line);padding:.8rem 0;scroll-margin-top:1rem}
.passage:first-of-type{border-top:0}
.passage:target{background:#fffbe8;outline:3px solid var(--mark);outline-offset:4px;border-radius:4px}
.passage h3{font-size:1rem;margin:0 0 .2rem}
.passage .label{color:var(--ok);margin-right:.2rem}
.facts,.back{color:var(--muted);font-size:.85rem;margin:.15rem 0}
.passage-text{margin:.5rem 0;padding:.6rem .9rem;background:#fafbfc;border-left:3px solid var(--line);white-space:pre-wrap;font-size:.93rem}
mark{background:var(--mark);padding:0 .1rem;border-radius:2px}
a{color:#1f5fa8}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
"""


def render_html(view: BriefView) -> str:
    """One self-contained page: inline CSS, no scripts, no external assets."""
    cited = _cited(view)
    anchors = _passage_anchors(cited)
    meta = f"Created {_e(_flat(view.created_at))}"
    if view.flow_run_id:
        meta += f" · flow run <code>{_e(view.flow_run_id)}</code>"
    head = [f'<header><h1><span class="brief-id">Brief #{view.brief_id}</span>{_e(_flat(view.question))}</h1>',
            f'<p class="meta">{meta}</p>', f'<p class="meta">{_e(_engines_line(view))}</p>']
    if view.extractive:
        head.append(f'<p class="banner extractive">{_e(EXTRACTIVE_STATEMENT.format(sourced="[SOURCED]", inferred="[INFERRED]"))}</p>')
    if view.audit.self_verified:
        head.append(f'<p class="banner">{_e(SELF_VERIFIED_STATEMENT)}</p>')
    if view.redactions:
        head.append(f'<p class="banner privacy">{_e(_redaction_sentence(view.redactions))}</p>')
    if view.evidence_run_id is not None:
        head.append(f'<p class="meta">{_e(_gathered_sentence(view))}</p>')
    head.append("</header>")
    body = [*head, *(_html_section(s, i, anchors) for i, s in enumerate(_sections(view))), _html_withheld(view),
            _html_audit(view), _html_passages(cited, anchors)]
    return ("<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>Brief #{view.brief_id}: {_e(_shorten(view.question, 80))}</title>\n"
            f"<style>{_CSS}</style>\n</head>\n<body>\n<main>\n" + "\n".join(b for b in body if b) +
            "\n</main>\n</body>\n</html>\n")
