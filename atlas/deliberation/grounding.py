"""What "the passage supports the claim" means for a [SOURCED] tag (DEL-3), decided before any
verifier is asked and whatever it answers.

A claim whose quote is found verbatim (whole words) keeps [SOURCED] only when all of these hold
(rule set `GROUNDING_RULES`); the first that fails is its downgrade reason:

(a) `quote_uninformative` — the quote holds at least `MIN_QUOTE_WORDS` content words (words that
    are not function words; numbers and direction words count). "the", "in the", "." or a
    three-word fragment cannot carry a claim. The minimum was set by measurement
    (`python -m bench.audit_attacks`, BENCHMARKS.md "Audit").
(b) `claim_not_covered` — every content word of the claim, every number (a percentage's "percent"
    too), every named entity and every direction word is found in one sentence of the passage that
    the quote touches ("the context"): same word, an inflection (light stem, or a shared
    prefix of at least 5 letters and 80 % of the shorter word), or a word of the same group in
    `SYNONYMS`; a direction word must meet a word of the same axis and sign ("reduced" ~ "lower").
    Words that only frame a finding ("the study found that …": `FRAMING_WORDS`) need not be found.
    The claim may not drop a hedge of the context ("may reduce", "probably reduces" do not carry
    "reduces"), nor the model or setting it is limited to (`SCOPE_WORDS`: "in mice", "in vitro").
(c) `direction_clash` — each direction word of the claim is read on the word it acts on; where the
    context puts the opposite direction on that word ("increases plaque" / "reduced plaque"), that
    is a clash. Every clash is counted, not only the first.
(d) `negation_clash` — the negations of the claim and of the context around the words they share
    (from six words before the quote or the first shared word, whichever is earlier — or from the
    start of the quote's clause when that is earlier still — to the last shared word) agree in number
    modulo two.

A claim is read against one sentence at a time: a quote spanning sentences grounds a claim only if
one of its sentences carries all of it. Where the quote occurs more than once, any occurrence's
sentence may. The context is the
    whole sentence, so a "not" just before the quote counts: a quote cut after "did not" is read
    with its "not".

The verifier (rules or a model) is asked only about what passes; it may still abstain.
This module is plain logic over plain strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from forum_atlas.deliberation.faithful import QUANTIFIERS, faithful, in_scope
from forum_atlas.deliberation.quotes import quote_spans
from forum_atlas.entailment.rules import HEDGES, NEGATIONS, TOKEN, WEAK_NEGATIONS, direction_of, light_stem, normalise
from forum_atlas.text import sentence_spans

GROUNDING_RULES = "grounding-v2"   # v1 (issue 22): coverage, directions, negations mod 2
MIN_QUOTE_WORDS = 4
DIRECTION_WINDOW = 3     # a direction word acts on a content word this many words away
PREFIX_MIN, PREFIX_RATIO = 5, 0.8
MIN_DECIDED_WORDS = 2    # with fewer claim words aligned, the rules cannot vouch for a claim alone
MAX_OCCURRENCES = 20     # a quote found more often than this is read in its first 20 sentences

# Words that carry no claim of their own: articles, prepositions, pronouns, auxiliaries, conjunctions.
# Quantifiers (all, every, always, only, most) are NOT here: "always reduces" claims more than "reduces".
FUNCTION_WORDS = frozenset("""a an the of in on at to for by with and or but is are was were be been being am as
that this these those from into onto than then it its itself their theirs there here which who whom whose what when
where while do does did done doing has have had having we our us they them he she his her him i me my you your
also both either each such via per among amongst within across between after before during about over under
through upon et al thus hence therefore however whereas although though since because so if very much would will
shall should must can""".split())
# Words that frame a finding rather than state it: a claim may add or drop them.
FRAMING_WORDS = frozenset("""found find finds show shows showed shown report reports reported observe observed
demonstrate demonstrated demonstrates indicate indicates indicated reveal revealed reveals suggest suggests
suggested according study studies research researchers authors author paper article evidence data result results
conclude concluded concluding conclusion note noted""".split())
# Small, stated synonym groups (spelling variants and near-identical terms).
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "percent pct percentage",
    "people persons individuals participants subjects patients",
    "child children paediatric pediatric",
    "elderly older aged",
    "mice mouse murine",
    "death deaths mortality die died dying",
    "drug drugs medication medications medicine medicines",
    "tumor tumour tumors tumours",
    "randomized randomised",
    "behavior behaviour behaviors behaviours",
    "anemia anaemia",
    "estrogen oestrogen",
    "fetal foetal",
    "esophageal oesophageal",
    "hematologic haematologic hematological haematological",
))
_SYNONYM_OF = {word: group for group in SYNONYMS for word in group}
# Besides the verifier's cues: words that negate ("unlikely to cause") or hedge ("probably", "if") a statement.
NEGATION_CUES = NEGATIONS | frozenset("unlikely hardly scarcely barely refute refuted refutes disproved".split())
HEDGE_CUES = HEDGES | frozenset("""likely probably presumably putatively suggestive tentative tentatively preliminary
if unless would""".split())
# Words that limit a finding to a model or a setting: where the sentence has one, the claim must carry it
# ("reduced tumour growth in mice" does not carry "reduced tumour growth").
SCOPE_WORDS = frozenset("""mice mouse murine rat rats rodent rodents animal animals vitro vivo zebrafish yeast
drosophila primate primates porcine bovine canine pilot simulated simulation hypothetical""".split())
_NUMBER = re.compile(r"\d")
_SYMBOL = re.compile(r"[<>=≤≥±]")
_ENTITY = re.compile(r"\b[A-Za-z]*[A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*\b")


@dataclass(frozen=True)
class Grounding:
    failed: str | None          # None, or the FailedCheck that takes the tag away
    detail: str = ""
    context: str = ""           # the sentence of the passage the claim was read against
    decided: bool = True        # the rules can vouch for it alone: enough of the claim aligned to the sentence


@dataclass(frozen=True)
class _Word:
    text: str
    stem: str
    pos: int


@dataclass(frozen=True)
class _Reading:
    content: list[_Word]
    directions: list[tuple[str, int, int]]    # (axis, sign, pos)


def _tokens(text: str) -> list[str]:
    """Tokens as the verifier reads them, with "20%" read as "20 percent" and "3,000" as "3000"."""
    out: list[str] = []
    for token in TOKEN.findall(normalise(text.replace("%", " percent ").replace("per cent", "percent"))):
        if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", token):
            token = token.replace(",", "")
        out.append(token)
    return out


def read(text: str) -> _Reading:
    tokens = _tokens(text)
    reading = _Reading([], [])
    for pos, word in enumerate(tokens):
        if word in NEGATION_CUES or word in WEAK_NEGATIONS or word in HEDGE_CUES:
            continue   # read by the faithfulness checks (polarity, modality)
        if (direction := direction_of(word)) is not None:
            reading.directions.append((direction[0], direction[1], pos))
        elif word not in FUNCTION_WORDS and not _SYMBOL.fullmatch(word):
            reading.content.append(_Word(word, light_stem(word), pos))
    return reading


def _entities(text: str) -> list[str]:
    """Acronyms and names written with capitals inside a word (US, BRCA1, IL-6, mTOR): matched as written."""
    return _ENTITY.findall(text)


def informative_words(quote: str) -> int:
    """How many content words (framing words included, function words not) a quote holds."""
    r = read(quote)
    return len(r.content) + len(r.directions)


def _same(a: _Word, b: _Word) -> bool:
    return _same_words(a.text, a.stem, b.text, b.stem)


@lru_cache(maxsize=65536)
def _same_words(a_text: str, a_stem: str, b_text: str, b_stem: str) -> bool:
    """Same word: the stem, a stated synonym, or a long shared prefix (numbers only when equal)."""
    if a_stem == b_stem or a_text == b_text:
        return True
    if _NUMBER.search(a_text) or _NUMBER.search(b_text):
        return False
    if a_stem.rstrip("e") == b_stem.rstrip("e"):   # "cause" ~ "causes" (stem "caus")
        return True
    group = _SYNONYM_OF.get(a_text) or _SYNONYM_OF.get(a_stem)
    if group is not None and (b_text in group or b_stem in group):
        return True
    common = 0
    for x, y in zip(a_stem, b_stem):
        if x != y:
            break
        common += 1
    return common >= PREFIX_MIN and common >= PREFIX_RATIO * min(len(a_stem), len(b_stem))


def _same_text(a: str, b: str) -> bool:
    return _same_words(a, light_stem(a), b, light_stem(b))


def contexts_of(quote: str, passage: str) -> list[tuple[str, int]]:
    """For each whole-word occurrence of the quote in `passage` (at most `MAX_OCCURRENCES`), each
    sentence it touches, and where the quote starts in that sentence (0 when it starts before it).
    A claim must be carried by one sentence: words gathered from several sentences do not make one."""
    out = []
    sentences = sentence_spans(passage)
    for start, end in quote_spans(quote, passage)[:MAX_OCCURRENCES]:
        touched = [(s, e) for s, e in sentences if s < end and e > start] or [(start, end)]
        out += [(passage[s:e], max(start - s, 0)) for s, e in touched]
    return out


def _closest(reading: _Reading, axis: str, at: int) -> list[tuple[int, int]]:
    """(position, sign) of the direction word(s) of `axis` closest to position `at`, within the window."""
    near = [(abs(p - at), p, s) for a, s, p in reading.directions if a == axis and abs(p - at) <= DIRECTION_WINDOW]
    closest = min((d for d, _, _ in near), default=None)
    return [(p, s) for d, p, s in near if d == closest]


def _direction_clashes(claim: _Reading, context: _Reading, matches: dict[int, list[_Word]]) -> list[str]:
    """Each direction word of the claim that the context reverses. It acts on the claim's words near it
    whose closest direction word of its axis it is; where the context reads more of those words the
    opposite way than the same way, that is a clash. Both texts are read alike, so a claim copied from
    its sentence never clashes with it."""
    clashes = []
    for axis, sign, pos in claim.directions:
        acted_on = [w for w in claim.content if (pos, sign) in _closest(claim, axis, w.pos)]
        readings = [{s for m in matches.get(w.pos, []) for _, s in _closest(context, axis, m.pos)} for w in acted_on]
        reversed_ = sum(r == {-sign} for r in readings)
        if reversed_ and reversed_ > sum(r == {sign} for r in readings):
            clashes.append(f"{'more' if sign > 0 else 'less'} {' '.join(w.text for w in acted_on)}")
    return clashes


@lru_cache(maxsize=1024)   # the audit asks once to pick what the verifier judges, and again for the verdict
def ground(claim: str, quote: str, passage: str) -> Grounding:
    """Checks (a)–(d) for a claim whose quote the verbatim rule already found in `passage`. Where the
    quote occurs more than once, the claim is grounded when it is grounded in one of its sentences."""
    words = informative_words(quote)
    if words < MIN_QUOTE_WORDS:
        return Grounding("quote_uninformative", f"the quote holds {words} content word{'s' * (words != 1)}; "
                                                f"a [SOURCED] claim needs a quote of at least {MIN_QUOTE_WORDS}")
    contexts = contexts_of(quote, passage)
    if not contexts:
        return Grounding("quote_not_verbatim", "the quote is not found with whole words in the passage as given")
    results = [_ground_in(read(claim), claim, context) for context, _ in contexts]
    return next((r for r in results if r.failed is None), results[0])


def _ground_in(c: _Reading, claim: str, context: str) -> Grounding:
    s = read(context)
    matches = {w.pos: [o for o in s.content if _same(w, o)] for w in c.content}
    clashes = _direction_clashes(c, s, matches)
    if clashes:
        return Grounding("direction_clash", f"{len(clashes)} direction clash{'es' * (len(clashes) > 1)}: the claim "
                                            f"says {', '.join(clashes)}; the source the opposite", context)
    missing = [w.text for w in c.content if not matches[w.pos] and w.text not in FRAMING_WORDS
               and w.text not in QUANTIFIERS]   # a quantifier the sentence lacks: quantifier_changed
    missing += [e for e in _entities(claim) if e.casefold() not in context.casefold()]
    unstated = [f"{'more' if sign > 0 else 'less'} ({axis})" for axis, sign, _ in c.directions
                if not any(a == axis and g == sign for a, g, _ in s.directions)]
    if missing or unstated:
        what = []
        if missing:
            what.append(f"not in the quote or its sentence: {', '.join(dict.fromkeys(missing))}")
        if unstated:
            what.append(f"direction not stated there: {', '.join(dict.fromkeys(unstated))}")
        return Grounding("claim_not_covered", "; ".join(what), context)

    reading = faithful(claim, context, _same_text)   # order, numbers, frames, polarity (issue 35)
    if reading.fault is not None:
        return Grounding(reading.fault.reason, reading.fault.detail, context)
    claim_words = {w.text for w in c.content}
    limits = in_scope(claim, context, _same_text)
    dropped_scope = sorted({w.text for w in s.content if w.text in SCOPE_WORDS and w.text in limits} - claim_words)
    if dropped_scope and not (claim_words & SCOPE_WORDS):
        return Grounding("claim_not_covered", f"the source limits it ({', '.join(dropped_scope)}); the claim "
                                              "does not", context)
    return Grounding(None, "", context, decided=reading.aligned >= MIN_DECIDED_WORDS)
