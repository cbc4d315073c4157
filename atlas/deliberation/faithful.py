"""Is a claim a faithful restatement of its sentence? (issue 35; rule set `grounding-v2`)

Coverage (every claim word is somewhere in the sentence) lets a claim rearrange the sentence's words
into another statement. A faithful restatement may only: delete words (a whole phrase with what it
governs), inflect a word, use a word of a stated synonym group, add framing ("the study found that"),
swap coordinated items ("A and B"), and move a prepositional phrase ("in mice", "among adults"). It
may not reorder the arguments of a relation, move or re-bind a number, splice two clauses, or drop or
invert a frame. Each of the checks below names its own downgrade reason:

- `unit_changed` — a number of the claim keeps the unit the sentence gives it (`μm` is not `m`, nor
  `years` `months`; a unit dropped or added counts), and says a number with its unit no more often than
  the sentence does.
- `number_rebound` — a number keeps its role: mean, median, range start or end, interval level or
  bound, p-value, ratio, a side of a comparison, a comparator in front of it ("less than 6 %").
- `order_changed` — the claim's content words, numbers and direction words align to the sentence in
  order (within each coordinated part or moved phrase of the claim), so each argument keeps its role.
- `clauses_spliced` — consecutive claim words may not jump over another clause's predicate and its
  new subject ("A increased X, and B decreased Y" does not give "A decreased Y"), nor drop one clause's
  predicate and go on in the next ("A was enrolled, and B was given" does not give "A was given"),
  unless the claim joins the two itself; a ';' in brackets ends no clause.
- `comparison_reversed` / `frame_dropped` — the sides of "than", "compared with", "versus", "relative
  to", "followed by", "rather than", "instead of" stay on their sides; a claim that keeps both sides
  without the comparison, or keeps what "rather than"/"instead of" rejects without it, drops the frame.
- `modality_dropped` — a hypothesis, aim, proposal, suggestion, question, hedge or another party's
  view governing the claimed words must stay a hypothesis (the claim keeps a cue of that kind). The
  cues are an open class: modal verbs and words built on hypothesis/proposal/speculation stems. "can"
  and "must" are kept too (a possibility is not a fact), but keep no hypothesis themselves.
- `quantifier_changed` — a quantifier of the claim (all, every, most, some, only, …) is the
  sentence's; each of the sentence's governing the claimed words ("less than 6 % of HSCs", "some
  patients", "25 out of 7,781 cases") is kept, counted ("most A … most B" needs both).
- `negation_clash` / `polarity_clash` — negations governing the claimed words are counted exactly,
  not modulo two: not/no/never/failed to/no longer, and morphological or lexical ones (non-, un-,
  in-/im-/ir-/il-, dis- on a word the other text has without it; -independent; lack/absence of;
  without; rather than; instead of). `negation_clash` when only plain negations differ.

A sentence negation, modality cue or quantifier governs the claimed words when a claimed word follows
it in the same clause (a clause ends at ; : and at commas before a new clause; a cue in brackets governs
only the bracketed words), so a claim that
deletes a negated phrase with its negation ("without Y", "but not in Z") keeps its tag, and a claim
that keeps one of two negations faithfully is not refused by parity.

Plain logic over plain strings; the word matcher is the grounding rule's (`same`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from forum_atlas.entailment.rules import direction_of, light_stem, number_words_to_digits

Same = Callable[[str, str], bool]

_TOKEN = re.compile(r"[^\W_]+(?:\.\d+)*|[<>=≤≥±;:,?()]")
# Function words: no content of their own (quantifiers, negations and comparison words are read apart).
_FUNCTION = frozenset("""a an the of in on at to for by with and or but is are was were be been being am as that
this these those from into onto then it its itself their theirs there here which who whom whose what when where
while do does did done doing has have had having we our us they them he she his her him i me my you your also
both either such via per among amongst within across between after before during about over under through upon
et al thus hence therefore however whereas although though since because so very much will shall""".split())
FRAMING = frozenset("""found find finds show shows showed shown report reports reported observe observed
demonstrate demonstrated demonstrates reveal revealed reveals according study studies research researchers
authors author paper article evidence data result results conclude concluded concluding conclusion note noted
present here""".split())

# Negation cues read as one (a phrase becomes one token before reading).
_NEGATION_PHRASES = ((r"\bno longer\b", "nolonger"), (r"\brather than\b", "ratherthan"),
                     (r"\binstead of\b", "insteadof"), (r"\bfailed to\b", "failedto"), (r"\bfails to\b", "failedto"),
                     (r"\bfail to\b", "failedto"), (r"\black of\b", "lackof"), (r"\bloss of\b", "lossof"), (r"\babsence of\b", "absenceof"),
                     (r"\bcompared (?:with|to)\b", "comparedwith"), (r"\bin comparison (?:with|to)\b", "comparedwith"),
                     (r"\brelative to\b", "relativeto"), (r"\bfollowed by\b", "followedby"),
                     (r"\bversus\b|\bvs\b\.?", "versus"), (r"\bless than\b", "lessthan"),
                     (r"\bfewer than\b", "fewerthan"), (r"\bmore than\b", "morethan"),
                     (r"\bgreater than\b", "greaterthan"), (r"\bat least\b", "atleast"), (r"\bat most\b", "atmost"),
                     (r"\bup to\b", "upto"), (r"\ba (?:number|variety|subset|proportion|fraction) of\b", "anumberof"))
PLAIN_NEGATIONS = frozenset("not no never none nor neither nolonger failedto unlikely hardly scarcely barely".split())
LEXICAL_NEGATIONS = frozenset("""without lossof lackof absenceof absence lack lacks lacking lacked absent independent
independently ratherthan insteadof unable""".split())
# Affixes that negate the word they are on, when the other text has the word without them.
NEGATING_PREFIXES = ("non", "un", "in", "im", "ir", "il", "dis", "anti")
COMPARISONS = frozenset("than comparedwith relativeto versus followedby ratherthan insteadof".split())
COMPARATORS = frozenset("lessthan fewerthan morethan greaterthan atleast atmost upto < > ≤ ≥ approximately about "
                        "nearly almost over under".split())
QUANTIFIERS = frozenset("""all every each always entire entirely whole most mostly majority many some several few
minority only solely exclusively subset any anumberof""".split())
# Modality and attribution: an open class by stem (and the modal verbs, closed by nature).
_MODAL_STEMS = re.compile(r"^(?:hypothe|postulat|propos|specul|conjectur|presum|putativ|suppos|assum|theori|"
                          r"predict|anticipat|believ|aim|objectiv|purpose|goal|sought|seek|suggest|impl[iy]|"
                          r"possib|potential|perhap|likel|unlikel|probabl|uncertain|unclear|unknown|question|"
                          r"whether|debat|controvers|notion|expect|tentativ|preliminar|"
                          r"plausib|conceiv|thought|view)")
_AIM_STEMS = re.compile(r"^(?:aim|objectiv|purpose|goal|sought|seek|question|whether|toinvestigate)")
# "to examine X": an aim (the infinitive of purpose), read as one cue
_PURPOSE = re.compile(r"\bto (?=(?:investigate|examine|explore|determine|assess|evaluate|test|study|compare|"
                      r"identify|characteri[sz]e|clarify|elucidate)\b)")
MODAL_VERBS = frozenset("may might could would should if unless seem seems seemed".split())
# "can", "must": a possibility or a necessity, not a hedge; dropping one states it as a fact
ABILITY_VERBS = frozenset("can must".split())
_ASSOCIATION = re.compile(r"^(?:associat|correlat|linked|relat(?:ed|ion))")
ATTRIBUTION = frozenset("others other previous previously prior earlier reportedly widely traditionally "
                        "conventionally commonly literature background".split())
# Roles a number can take from the words around it.
_UNIT = re.compile(r"^(?:percent|fold|times|x|(?:[pnμumcdk]|da)?(?:g|l|m|mol|s|hz|pa|gy|iu|bp|kb|da)\d?|"
                   r"mmhg|kda|kcal|cal|cells?|copies|"
                   r"(?:s|sec|secs|seconds?|min|mins|minutes?|h|hr|hrs|hours?|d|days?|wk|wks|weeks?|mo|months?|"
                   r"y|yr|yrs|years?|decades?))$")
_BOUNDARY = frozenset(";:?")
_SOFT_BOUNDARY = frozenset(", but whereas while although though however".split())
_CONTRAST = frozenset("but whereas while although though however".split())
_MOVABLE = frozenset("in among during within across after before at over for from".split())
_COORDINATION = frozenset("and or , ;".split())


@dataclass(frozen=True)
class Tok:
    text: str
    stem: str
    pos: int
    kind: str        # content | number | direction | function | punct | negation | comparison | comparator |
                     # quantifier | modal


def _kind(word: str) -> str:
    if word in _BOUNDARY or word in (",", "(", ")", "=", "±"):
        return "punct"
    if word in PLAIN_NEGATIONS or word in LEXICAL_NEGATIONS:
        return "negation"
    if word in COMPARISONS:
        return "comparison"
    if word in COMPARATORS:
        return "comparator"
    if word in QUANTIFIERS:
        return "quantifier"
    if word in MODAL_VERBS or word in ABILITY_VERBS or word in ATTRIBUTION or _MODAL_STEMS.match(word) or _AIM_STEMS.match(word):
        return "modal"
    if word in _FUNCTION or word in FRAMING:
        return "function"   # framing ("the study found that") may be added or dropped: it is not aligned
    if re.search(r"\d", word):
        return "number"
    if direction_of(word) is not None:
        return "direction"
    return "content"


def tokens(text: str) -> list[Tok]:
    """Lower-cased tokens: μ/µ kept (NFKC reads µ as μ), "%" as "percent", "n't" as "not", number words
    as digits, a dash between numbers as "to", thousands separators dropped, hyphenated words as parts,
    multi-word cues ("rather than", "compared with", "less than") as one token."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"n['’]t\b", " not", text).replace("cannot", "can not")
    text = re.sub(r"\bnot only\b|\bno doubt\b|\bnot least\b", " ", text)
    text = re.sub(r"\bwhether or not\b", " whether ", text)
    text = text.replace("%", " percent ").replace("per cent", "percent")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d)\s*[-–—]\s*(?=\d)", " to ", text)
    text = number_words_to_digits(text)
    for pattern, token in _NEGATION_PHRASES:
        text = re.sub(pattern, f" {token} ", text)
    text = re.sub(r"\b(ha(?:s|ve|d) been) (?=(?:reported|shown|described|found|observed|suggested|proposed|implicated|"
                  r"considered|thought|believed|linked|known)\b)", r"\1 reportedly ", text)   # another party's view
    text = _PURPOSE.sub(" toinvestigate ", text)
    text = re.sub(r"\bnon[-‐‑\s]+(?=[^\W\d_])", "non", text)   # "non-smokers": one word, negated by its affix
    text = re.sub(r"[-‐‑–—/]", " ", text)
    out = []
    for pos, word in enumerate(_TOKEN.findall(text)):
        kind = _kind(word)
        out.append(Tok(word, word if kind == "number" else light_stem(word), pos, kind))
    return out


ALIGNED = ("content", "number", "direction", "quantifier")


def _negated_root(word: str) -> str | None:
    for prefix in NEGATING_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 4:
            return word[len(prefix):]
    return None


def _pair(a: Tok, b: Tok, same: Same) -> int | None:
    """0 when the words are the same word, 1 when one is the other with a negating affix, else None."""
    if a.kind == "direction" or b.kind == "direction":
        da, db = direction_of(a.text), direction_of(b.text)
        return 0 if da is not None and da == db else None
    if a.kind == "number" or b.kind == "number":
        return 0 if a.text == b.text else None
    if same(a.text, b.text):
        return 0
    for x, y in ((a, b), (b, a)):
        root = _negated_root(x.text)
        if root is not None and same(root, y.text):
            return 1
    return None


@dataclass(frozen=True)
class Fault:
    reason: str
    detail: str


@dataclass
class _Alignment:
    at: dict[int, int]            # claim token pos -> sentence token pos
    flips: int                    # aligned pairs that differ by a negating affix
    blocks: list[list[Tok]]


def _blocks(claim: list[Tok]) -> list[list[Tok]]:
    """The claim cut into parts that may move against each other: coordinated items and phrases that
    start with a movable preposition."""
    blocks: list[list[Tok]] = [[]]
    for tok in claim:
        if tok.text in _COORDINATION or tok.text in _MOVABLE:
            blocks.append([])
        if tok.kind in ALIGNED:
            blocks[-1].append(tok)
    return [b for b in blocks if b]


def _align(claim: list[Tok], sentence: list[Tok], same: Same) -> tuple[_Alignment, list[Tok] | None]:
    """Each claim word to the earliest sentence position after the previous one (the same word before a
    word with a negating affix). A part of the claim that cannot follow on is aligned from the start
    (a moved phrase, a swapped coordinated item); inside a part the order must hold. Returns the first
    part that has a word out of order (None when all align)."""
    options = {tok.pos: [(o.pos, f) for o in sentence if o.kind in ALIGNED and (f := _pair(tok, o, same)) is not None]
               for tok in claim if tok.kind in ALIGNED}

    def place(block: list[Tok], last: int) -> tuple[dict[int, tuple[int, int]], Tok | None]:
        placed: dict[int, tuple[int, int]] = {}
        for tok in block:
            later = [(f, p) for p, f in options[tok.pos] if p > last]
            if not options[tok.pos]:
                continue          # a framing word, or a word the coverage check judged
            if not later:
                return placed, tok
            flip, last = min([fp for fp in later if fp[0] == 0] or later, key=lambda fp: fp[1])
            placed[tok.pos] = (last, flip)
        # then each word as late as the next one allows: the occurrence nearest the words it goes with
        order = list(placed)
        nxt = placed[order[-1]][0] if order else 0
        for pos in reversed(order[:-1]):
            spot, flip = placed[pos]
            before = [(f, p) for p, f in options[pos] if spot <= p < nxt and f <= flip]
            placed[pos] = (max(before, key=lambda fp: fp[1])[1], flip) if before else (spot, flip)
            nxt = placed[pos][0]
        return placed, None

    at: dict[int, int] = {}
    flips, broken, last = 0, None, -1
    blocks = _blocks(claim)
    for block in blocks:
        placed, stuck = place(block, last)
        if stuck is not None:
            placed, stuck = place(block, -1)
        if stuck is not None and broken is None:
            broken = [stuck, *block]
        for pos, (spot, flip) in placed.items():
            at[pos], flips = spot, flips + flip
        last = max((spot for spot, _ in placed.values()), default=last)
    return _Alignment(at, flips, blocks), broken


def _clause_start(sentence: list[Tok], pos: int) -> int:
    """Where the clause holding `pos` starts: after the last ; : ? or clause word before it."""
    for tok in reversed(sentence[:pos]):
        if tok.text in _BOUNDARY or tok.text in _SOFT_BOUNDARY:
            return tok.pos + 1
    return 0


def _governs(sentence: list[Tok], cue: Tok, aligned: set[int]) -> bool:
    """A cue governs the claimed words when one of them follows it in the same clause; a cue in an aside
    ("(a distinct pathogenic subset)", "(potentially curative)") only the aside's words."""
    depth = 0
    for tok in sentence[cue.pos + 1:]:
        depth += (tok.text == "(") - (tok.text == ")")
        if tok.text in _BOUNDARY or tok.text in _SOFT_BOUNDARY or depth < 0:
            return False
        if tok.pos in aligned:
            return True
    return False


def _number_reading(toks: list[Tok], i: int) -> tuple[str, str, str]:
    """(unit, role, comparator) of the number at index i."""
    after = [t.text for t in toks[i + 1:i + 4]]
    before = [t.text for t in toks[max(i - 3, 0):i] if t.text not in ("(", "=", ":", ",")]
    unit = after[0] if after and _UNIT.match(after[0]) else ""
    rest = after[1:] if unit else after
    role = "value"
    prev = before[-1] if before else ""
    if rest[:1] and rest[0] in ("ci", "confidence", "cis"):
        role = "interval level"
    elif prev in ("mean", "average", "median", "mode", "sd", "se", "iqr"):
        role = prev
    elif prev == "p" or before[-2:] == ["p", "<"] or prev in ("p", "pvalue"):
        role = "p-value"
    elif prev in ("ci", "interval") or "ci" in before:
        role = "interval bound"
    elif prev in ("or", "hr", "rr", "ratio", "aor", "ahr", "irr"):
        role = "ratio"
    elif prev == "n":
        role = "count"
    elif prev == "to" and i >= 2 and toks[i - 2].kind == "number":
        role = "range end"
    elif rest[:1] == ["to"] and len(rest) > 1 and re.search(r"\d", rest[1]):
        role = "range start"
    elif any(t.kind == "comparison" for t in toks[i + 1:i + 3]):
        role = "compared (left)"
    elif any(t.kind == "comparison" for t in toks[max(i - 2, 0):i]):
        role = "compared (right)"
    comparator = next((t for t in reversed(before[-2:]) if t in COMPARATORS), "")
    return unit, role, comparator


def _numbers(claim: list[Tok], sentence: list[Tok], al: _Alignment) -> Fault | None:
    """Each number read at the occurrence the alignment gave it (any occurrence when it has none); a
    number with its unit is said no more often than the sentence says it ("between 1 month and 1 year"
    is not "between 1 year and 1 year")."""
    said = Counter((t.text, _number_reading(sentence, j)[0]) for j, t in enumerate(sentence) if t.kind == "number")
    told = Counter((t.text, _number_reading(claim, i)[0]) for i, t in enumerate(claim) if t.kind == "number")
    for (number, unit), n in told.items():
        if said[(number, unit)] and n > said[(number, unit)]:
            theirs = sorted({u or "no unit" for (x, u) in said if x == number})
            return Fault("unit_changed", f"{number} {unit or '(no unit)'} {n} times in the claim; the source says it "
                                         f"{said[(number, unit)]} time(s), with {' and '.join(theirs)}")
    for i, tok in enumerate(claim):
        if tok.kind != "number":
            continue
        found = [al.at[tok.pos]] if tok.pos in al.at else [
            j for j, o in enumerate(sentence) if o.kind == "number" and o.text == tok.text]
        if not found:
            continue          # a number the sentence lacks: the coverage check's
        unit, role, comparator = _number_reading(claim, i)
        readings = [_number_reading(sentence, j) for j in found]
        if not any(u == unit for u, _, _ in readings):
            theirs = " or ".join(sorted({u or "no unit" for u, _, _ in readings}))
            return Fault("unit_changed", f"{tok.text} {unit or '(no unit)'} in the claim; {tok.text} {theirs} in the source")
        same_unit = [(r, c) for u, r, c in readings if u == unit]
        if not any(r == role for r, _ in same_unit):
            return Fault("number_rebound", f"{tok.text} is a {role} in the claim; in the source a "
                                           f"{' or '.join(sorted({r for r, _ in same_unit}))}")
        if not any(r == role and c == comparator for r, c in same_unit):
            theirs = " or ".join(sorted({c or "no comparator" for r, c in same_unit if r == role}))
            return Fault("number_rebound", f"{comparator or 'no comparator'} {tok.text} in the claim; {theirs} "
                                           f"{tok.text} in the source")
    return None


def _sides(toks: list[Tok], marker: Tok) -> tuple[set[int], set[int]]:
    """Positions of the words on each side of a comparison marker, within its clause (a comma before
    "followed by" does not end the left side)."""
    left: set[int] = set()
    for tok in reversed(toks[:marker.pos]):
        if tok.text in _BOUNDARY or (tok.text in _SOFT_BOUNDARY and tok.text != "," and tok.pos != marker.pos - 1):
            break
        if tok.kind in ALIGNED:
            left.add(tok.pos)
    right: set[int] = set()
    for tok in toks[marker.pos + 1:]:
        if tok.text in _BOUNDARY or tok.text in _SOFT_BOUNDARY or tok.kind == "comparison":
            break
        if tok.kind in ALIGNED:
            right.add(tok.pos)
    return left, right


def _comparisons(claim: list[Tok], sentence: list[Tok], al: _Alignment) -> Fault | None:
    for marker in (t for t in sentence if t.kind == "comparison"):
        left, right = _sides(sentence, marker)
        kept_left = {c for c, s in al.at.items() if s in left}
        kept_right = {c for c, s in al.at.items() if s in right}
        readings = []   # (agreeing, crossing) for each claim marker of the same kind
        for mine in (t for t in claim if t.text == marker.text):
            c_left, c_right = _sides(claim, mine)
            readings.append(((c_left & kept_left) | (c_right & kept_right), (c_left & kept_right) | (c_right & kept_left)))
        if any(agree and not cross for agree, cross in readings):
            continue
        if any(cross for _, cross in readings):
            return Fault("comparison_reversed", f"the sides of '{marker.text}' are swapped")
        rejects = marker.text in ("ratherthan", "insteadof")
        if kept_right and (kept_left or rejects):
            return Fault("frame_dropped", f"the source compares ({marker.text}); the claim keeps "
                                          f"{'what it rejects' if rejects else 'both sides'} without it")
    for mine in (t for t in claim if t.kind == "comparison"):
        if not any(t.text == mine.text for t in sentence):
            return Fault("comparison_reversed" if any(t.kind == "comparison" for t in sentence) else "frame_dropped",
                         f"the claim compares ({mine.text}); the source does not in those words")
    return None


_BE = frozenset("is are was were be been has have had".split())


def _bracketed(toks: list[Tok]) -> set[int]:
    """Positions inside brackets: a ';' in "(SR; combination therapy)" ends no clause."""
    inside, depth = set(), 0
    for tok in toks:
        depth = depth + 1 if tok.text == "(" else max(depth - 1, 0) if tok.text == ")" else depth
        if depth:
            inside.add(tok.pos)
    return inside


def _predicate(tok: Tok) -> bool:
    """A word that can carry a clause's predicate: a form of be/have, a participle or past tense."""
    return tok.text in _BE or (tok.kind in ("content", "direction") and len(tok.text) >= 4
                               and tok.text.endswith(("ed", "en")))


def _clause_break(between: list[Tok], inside: set[int]) -> int | None:
    """Index of the first word that starts a new clause: a contrast word, ';', or ', and' / ', but'."""
    for k, t in enumerate(between):
        if t.pos in inside:
            continue
        if t.text in _CONTRAST or t.text == ";" or (t.text in ("and", "but") and k and between[k - 1].text == ","):
            return k
    return None


_JOINS = frozenset(",;:").union({"and", "or"}, _CONTRAST)


def _splice(claim: list[Tok], sentence: list[Tok], al: _Alignment) -> Fault | None:
    """Consecutive claim words may not skip another clause's predicate followed by a new subject, nor
    drop the predicate of one clause and go on in the next ("Ninety subjects were enrolled, and LAJEV
    was given" does not give "Ninety subjects was given"), unless the claim joins them itself."""
    inside = _bracketed(sentence)
    block_of = {t.pos: n for n, block in enumerate(al.blocks) for t in block}
    placed = [t for t in claim if t.pos in al.at]
    for a, b in zip(placed, placed[1:]):
        p, q = al.at[a.pos], al.at[b.pos]
        between = sentence[p + 1:q]
        if not between:
            continue
        same_block = block_of.get(a.pos) == block_of.get(b.pos)
        # a phrase moved into the claim is checked only when it is a phrase of the other clause
        # ("increased in only 10 of 50"); its words may stand elsewhere as they please ("ApoE mice" -> "in mice")
        prep = next((t.text for t in reversed(claim[a.pos + 1:b.pos]) if t.text in _MOVABLE), None)
        lifted = not same_block and prep is not None and prep in {t.text for t in sentence[max(p + 1, q - 3):q]}
        if (same_block or lifted) and not any(t.text in _JOINS for t in claim[a.pos + 1:b.pos]):
            k = _clause_break(between, inside)
            # a predicate skipped on either side of the break; a new subject (or a contrast) after it
            if k is not None and any(_predicate(t) for t in between[:k] + between[k + 1:]) and (
                    between[k].text in _CONTRAST or between[k].text == ";" or any(t.kind in ALIGNED for t in between[k + 1:])):
                return Fault("clauses_spliced", f"the claim skips a predicate and goes on in another clause "
                                                f"(after '{between[k].text}')")
        if not same_block:
            continue
        cut = next((k for k, t in enumerate(between) if t.text in (";", ":") and t.pos not in inside), None)
        if cut is not None and any(t.kind in ALIGNED for t in between[:cut]) and any(
                t.kind in ALIGNED for t in between[cut + 1:]):
            return Fault("clauses_spliced", "the claim joins words from both sides of a ';' or ':' of the source")
        contrast = next((k for k, t in enumerate(between) if t.text in _CONTRAST), None)
        if contrast is not None and any(t.kind in ALIGNED for t in between[:contrast]) and any(
                t.kind in ALIGNED for t in between[contrast + 1:]):
            return Fault("clauses_spliced", f"the claim joins words from both sides of '{between[contrast].text}'")
        if not any(t.kind in ("direction", "negation") for t in between):
            continue
        breaks = [k for k, t in enumerate(between) if t.text in (",", ";", "and", "but", "whereas", "while")]
        if breaks and any(t.kind == "content" for t in between[breaks[-1] + 1:]) and any(
                t.kind == "direction" for t in between[:breaks[-1]]):
            return Fault("clauses_spliced", "the claim joins words of two clauses of the source")
    return None


def in_scope(claim: str, sentence: str, same: Same) -> frozenset[str]:
    """The sentence's words that may limit the claim: all but those of a later clause the claim does
    not reach ("X reduced Y, and Z protected mice" does not limit "X reduced Y" to mice)."""
    s = tokens(sentence)
    al, _ = _align(_claim_tokens(claim, sentence), s, same)
    if not al.at:
        return frozenset(t.text for t in s)
    last = max(al.at.values())
    tail = s[last + 1:]
    k = _clause_break(tail, _bracketed(s))
    return frozenset(t.text for t in (s if k is None else s[:last + 1 + k]))


def _cues(toks: list[Tok], kinds: tuple[str, ...]) -> list[Tok]:
    return [t for t in toks if t.kind in kinds]


_HEDGE_VERBS = re.compile(r"^(?:suggest|impl[iy]|propos|postulat|hypothe|believ|thought|specul|assum|presum|suppos|"
                          r"expect|predict|anticipat|conjectur|theori)")


def modality_class(word: str) -> str:
    """aim (an aim, a question), attribution (another party's view), hedge (a verb that proposes:
    suggest, postulate, …), ability ("can", "must") or modal (a modal verb, or a hedging adverb or
    adjective: possibly, likely, …)."""
    if word in ABILITY_VERBS:
        return "ability"
    if word in ATTRIBUTION:
        return "attribution"
    if _AIM_STEMS.match(word):
        return "aim"
    return "hedge" if _HEDGE_VERBS.match(word) else "modal"


# what keeps a frame of each kind: a proposing verb is kept by any hedge; a modal only by a modal; "can"
# by itself or a weaker modal ("may"), and it keeps nothing but itself
_KEPT_BY = {"aim": {"aim"}, "attribution": {"attribution"}, "hedge": {"hedge", "modal"}, "modal": {"modal"},
            "ability": {"ability", "modal"}}


def _modality(claim: list[Tok], sentence: list[Tok], aligned: set[int]) -> Fault | None:
    """Each kind of frame governing the claimed words (a hedge, an aim or question, another party's view)
    is kept by a cue of the same kind in the claim. A claim cue that is the sentence's own cue of words it
    does not govern keeps nothing else ("(uncertainty)" in both does not keep a dropped "can")."""
    cues = _cues(sentence, ("modal",))
    governing = [t for t in cues if _governs(sentence, t, aligned)]
    idle = Counter(t.text for t in cues if t not in governing and t.text not in {g.text for g in governing})
    said = Counter(t.text for t in _cues(claim, ("modal",)))
    mine = {modality_class(word) for word, n in said.items() if n > idle[word]}
    if claim and claim[-1].text == "?":
        mine.add("aim")
    dropped = [t.text for t in governing if not _KEPT_BY[modality_class(t.text)] & mine]
    if sentence and sentence[-1].text == "?" and aligned and "aim" not in mine:
        dropped.append("a question")
    if dropped:
        return Fault("modality_dropped", f"the source frames it ({', '.join(dict.fromkeys(dropped))}); the claim "
                                         "states it as a finding")
    return None


def _association(claim: list[Tok], sentence: list[Tok], al: _Alignment) -> Fault | None:
    """"A was associated with higher B" does not give "A raised B": an association between the claimed
    words is kept."""
    spots = sorted(al.at.values())
    if len(spots) < 2:
        return None
    links = [t for t in sentence if _ASSOCIATION.match(t.text) and spots[0] < t.pos < spots[-1] and t.pos not in spots]
    if links:   # the claim's own association word, if any, stands elsewhere in the sentence
        return Fault("frame_dropped", f"the source states an association ({links[0].text}); the claim does not")
    return None


def _quantifiers(claim: list[Tok], sentence: list[Tok], al: _Alignment, same: Same) -> Fault | None:
    aligned = set(al.at.values())
    theirs = {t.text for t in sentence if t.kind == "quantifier"}
    for t in claim:
        if t.kind == "quantifier" and t.text not in theirs:
            return Fault("quantifier_changed", f"the claim says '{t.text}'; the source does not")
    # counted, not as a set: "most Archaea … most genes" is not kept by one "most"
    mine = Counter(t.text for t in claim if t.kind == "quantifier")
    governing = Counter(t.text for t in sentence if t.kind == "quantifier" and _governs(sentence, t, aligned))
    for word, n in governing.items():
        if n > mine[word]:
            return Fault("quantifier_changed", f"the source says '{word}' {n} time(s) over the claimed words; "
                                               f"the claim {mine[word]}")
    # "6 % of HSCs", "25 out of 7,781 cases": a proportion in front of a claimed word
    # kept as a share ("14 of 14 models" is not "14 models"): the number with its "of" words
    mine_shares = {(c.text, *(o.text for o in claim[i + 1:i + 3])) for i, c in enumerate(claim) if c.kind == "number"}
    for i, t in enumerate(sentence):
        nxt = [o.text for o in sentence[i + 1:i + 3]]
        of = 2 if nxt[:2] in (["percent", "of"], ["out", "of"]) else 1 if nxt[:1] == ["of"] else 0
        if (t.kind == "number" and of and (t.text, *nxt[:of]) not in {share[:of + 1] for share in mine_shares}
                and any(o.pos in aligned for o in sentence[i + 1 + of:i + 5 + of])):
            return Fault("quantifier_changed", f"the source limits it to {t.text} {' '.join(nxt[:of])} them; "
                                               "the claim drops it")
    return None


def _polarity(claim: list[Tok], sentence: list[Tok], al: _Alignment) -> Fault | None:
    aligned = set(al.at.values())
    theirs = [t for t in sentence if t.kind == "negation" and _governs(sentence, t, aligned)]
    mine = [t for t in claim if t.kind == "negation" and _governs(claim, t, set(al.at))]
    # a negated framing word ("unobserved", "unreported") against the claim's bare one: framing words are
    # not aligned, so the affix is compared here
    bare = {t.stem for t in claim if t.text in FRAMING}
    flips = al.flips + sum(1 for t in sentence if (root := _negated_root(t.text)) in FRAMING
                           and light_stem(root) in bare and not any(c.text == t.text for c in claim))
    if len(mine) + flips == len(theirs) or len(theirs) + flips == len(mine):
        return None
    plain = all(t.text in PLAIN_NEGATIONS for t in (*theirs, *mine)) and not flips
    what = ", ".join(t.text for t in theirs) or "none"
    return Fault("negation_clash" if plain else "polarity_clash",
                 f"the claim has {len(mine)} negation(s) ({', '.join(t.text for t in mine) or 'none'}), the "
                 f"source {len(theirs)} governing the same words ({what}){'; a negating affix differs' * bool(flips)}")


@dataclass(frozen=True)
class Reading:
    fault: Fault | None
    aligned: int          # claim content words and numbers aligned to the sentence


_PASSIVE = re.compile(r"^(?P<patient>[^,;]+?)\s+(?:is|are|was|were|has been|have been|had been)\s+(?P<adverb>\w+ly\s+)?"
                      r"(?P<verb>[a-z]+(?:ed|en))\s+by\s+(?P<agent>[^,;]+?)(?P<rest>\s*[,;].*)?[.\s]*$", re.IGNORECASE)


def active_voice(claim: str) -> str | None:
    """"B was reduced by A[, rest]" as "A reduced B[, rest]": a simple clause with one "by" agent."""
    m = _PASSIVE.match(claim.strip())
    if m is None or " by " in m["agent"] or " by " in m["patient"]:
        return None
    agent, moved = m["agent"], ""
    pp = re.search(rf"\s(?:{'|'.join(sorted(_MOVABLE))})\s", agent)
    if pp is not None:   # "by A during B": the phrase stays with the clause, not with the agent
        agent, moved = agent[:pp.start()], agent[pp.start():]
    return f"{agent} {m['adverb'] or ''}{m['verb']} {m['patient']}{moved}{m['rest'] or ''}"


def _claim_tokens(claim: str, sentence: str) -> list[Tok]:
    passive = _PASSIVE.match(claim.strip())
    if passive is not None and not re.search(rf"\b{re.escape(passive['verb'])}\s+by\b", sentence, re.IGNORECASE):
        # the sentence says it in the active voice: the claim's agent must be the sentence's subject
        return tokens(active_voice(claim) or claim)
    return tokens(claim)


def faithful(claim: str, sentence: str, same: Same) -> Reading:
    """The first fault of a claim read against its sentence, and how much of it aligned. A claim in the
    passive of a simple clause is read in the active voice when that aligns and the passive does not."""
    c, s = _claim_tokens(claim, sentence), tokens(sentence)
    al, broken = _align(c, s, same)
    aligned = sum(1 for t in c if t.pos in al.at and t.kind in ("content", "number"))
    checks = (
        lambda: _quantifiers(c, s, al, same),
        lambda: _numbers(c, s, al),
        lambda: _comparisons(c, s, al),
        lambda: Fault("order_changed", f"'{broken[0].text}' stands elsewhere in the source: the claim's words do not "
                                       "follow the sentence's order") if broken else None,
        lambda: _splice(c, s, al),
        lambda: _modality(c, s, set(al.at.values())),
        lambda: _association(c, s, al),
        lambda: _polarity(c, s, al),
    )
    for check in checks:
        fault = check()
        if fault is not None:
            return Reading(fault, aligned)
    return Reading(None, aligned)
