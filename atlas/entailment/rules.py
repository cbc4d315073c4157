"""A deterministic support verifier (DEL-8) for when no entailment model is available.

It reads a (claim, quote, passage) triple the way a careful auditor without a model would: does
one sentence of the quote carry the claim's content words, in the claim's direction and polarity?
It commits only when that lexical evidence is unambiguous and abstains otherwise: the seed's
contract is about PRECISION where a verifier commits (support-direction precision >= 98 %), so a
rule that cannot tell says so instead of guessing.

Reading a text: lower-cased words, a light stemmer and a shared-prefix match ("associated" ~
"association"); number words read as digits ("one in five" = "1 in 5"); "X-induced"/"X-dependent"
kept as one word; stopwords dropped. Separately it notes direction words on three axes (amount:
increase/higher/promotes/induces ↔ decrease/lower/inhibits/prevents; quality: improves ↔ worsens;
sign: positively ↔ negatively), negation cues (strong: not, no, never, failed, unchanged, …; weak:
without, independent, lack of, absence, "not in …"), and hedges (whether, unknown, hypothesised,
may, could, …).

Verdicts
- supports (verbatim): the claim is a whole-word span of the quote (whitespace and case aside) with
  no negation or hedge in the eight words before it or the three after it.
- supports: one sentence of the quote carries EVERY content word of the claim, in the claim's order
  (a role swap "A inhibits B" / "B inhibits A" is not support), and every number of the claim; each
  direction word of the claim is read the same way in that sentence (anchored: the quote's
  direction word nearest to the word the claim's direction acts on); the negations near the matched
  words are the claim's own, none stands before them ("no evidence that …"); and the sentence does
  not hedge unless the claim does.
- contradicts: the sentence carries most of the claim (70 %, at most two words missing, all its
  numbers, no hedge) and there is exactly one clear polarity clash: a direction word of the claim
  meets only its antonym on the same word and side (increases ↔ decreases, positively ↔
  negatively, …) with no negation around; or the claim is negated once and the sentence, carrying
  all of it, not at all; or the sentence's single negation stands right before the claim's
  (agreeing) direction word ("was not associated with an increased risk", "did not reduce") or,
  for a claim without direction words that it fully carries, right before one of its words ("is
  not effective").
- contextual: the quote carries at most a third of the claim's content words and the whole
  passage at most 30 % — the passage may share the topic, it does not state the claim.
- abstain: everything else — paraphrase, partial overlap, numbers that differ, mixed directions
  ("lower risk of A, higher risk of B"), negations whose scope a rule cannot read, claims too short
  to judge (fewer than two content words).

`explain()` returns the verdict with its reason in words (for the audit log and for tuning).
Thresholds (`RuleParams`) were tuned on SciFact claims_train; figures are reported on claims_dev by
`python -m bench.support_eval`. Expect few commitments on paraphrased claims (SciFact's claims
are rewritten, not copied): this verifier is a precise fallback, not a recall engine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from forum_atlas.calls import Verdict
from forum_atlas.entailment.base import SupportJudgement, SupportQuery

TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*%?|[<>=≤≥±]")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
                      "million": "1000000", "half": "1/2", "third": "1/3", "quarter": "1/4", "twice": "2x",
                      "double": "2x", "doubled": "2x", "threefold": "3x", "twofold": "2x"})
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b")
_COMPOUND = re.compile(r"(?<=[a-z0-9])-(induced|mediated|activated|dependent|independent|related|associated|"
                       r"driven|deficient|regulated|stimulated|inhibited|resistant|positive|negative|free)\b")
_SYMBOL = re.compile(r"[<>=≤≥±]")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z(\[0-9])|\s{3,}")
_NUMBER = re.compile(r"\d")

STOPWORDS = frozenset("""a an the of in on at to for by with and or is are was were be been being as that this
these those from into than then it its their there which who whom whose what when where while can do does did
has have had having we our us they them he she his her i you your also both either each such via per among
within across between after before during about over under through upon et al thus hence therefore however
whereas although though since because so if very much many others another own
several various result results show shows showed shown found find finds study studies
data report reported reports observed demonstrate demonstrated demonstrates suggest suggests suggested
indicate indicates indicated reveal revealed reveals here present conclusion conclusions background methods
finding findings role roles patients using use used""".split())

# Negation cues. "n't" is rewritten to " not" before tokenising.
NEGATIONS = frozenset("""not no never none nor fail fails failed unable ineffective insignificant
nonsignificant unaffected unchanged unrelated unassociated""".split())
# Weak cues: they often negate something other than the claim ("compared with those without",
# "independent but interrelated"). They block a "supports" and are never a contradiction on their own.
WEAK_NEGATIONS = frozenset("""without independent independently inconclusive failure absence absent
neither lack lacks lacking lacked""".split())
# "not in partnerships", "not only": a negation that qualifies a noun phrase, not the predicate.
_NOMINAL_AFTER_NOT = frozenset("in with without of for from only all every".split())
# Modality: a quote that asks, hypothesises or hedges does not state the claim.
HEDGES = frozenset("""whether unknown unclear uncertain hypothesis hypothesize hypothesized hypothesise
hypothesised hypothesizing may might could possibly possible potential potentially perhaps putative
investigate investigated investigating examine examined examining explore explored assess assessed
aim aimed objective question questions speculate speculated controversial debated remains""".split())

# Direction words: axis -> (up words, down words). Matched on the light stem (see light_stem).
_AXES: dict[str, tuple[str, str]] = {
    # amount and effect are one axis: "increases X" and "inhibits X" clash, "enhances" and "induces" agree
    "amount": (
        ("increase increas rise rose risen raise elevat higher high more greater larger enhanc augment boost "
         "upregulat overexpress exceed accelerat gain longer faster expand amplif "
         "promot activat induc stimulat potentiat facilitat trigger"),
        ("decrease decreas declin fall fell drop lower low less fewer smaller reduc diminish downregulat "
         "attenuat lessen loss shorter slower shrink deplet "
         "inhibit suppress repress block prevent impair abolish abrogat antagoniz inactivat deactivat"),
    ),
    "quality": (
        "improv benefit better beneficial protect protective favorabl favourabl",
        "worsen wors harm harmful detriment deteriorat adverse unfavorabl unfavourabl exacerbat aggravat",
    ),
    "sign": ("positive positiv", "negative negativ inverse inversely"),
}
_DIRECTION_PREFIXES: list[tuple[str, str, int]] = sorted(
    ((prefix, axis, sign) for axis, (ups, downs) in _AXES.items()
     for sign, words in ((1, ups), (-1, downs)) for prefix in words.split()),
    key=lambda item: -len(item[0]),
)
# Words that start like a direction word but are not one.
_NOT_DIRECTION = frozenset("""highlight highlights highlighted moreover induction inductive inducible
increment incremental positivity negativity preventive prevention inhibitor inhibitors activator activators
promoter promoters inducer inducers suppressor suppressors repressor repressors blocker blockers enhancer
enhancers stimulus stimuli highly""".split())


@dataclass(frozen=True)
class RuleParams:
    """Thresholds, tuned on SciFact claims_train (never on dev)."""
    min_content: int = 2                 # content + direction words a claim needs before anything is judged
    support_coverage: float = 1.0        # share of the claim's content words one quote sentence must carry
    support_max_missing: int = 0         # …and at most this many missing
    support_in_order: bool = True        # …in the claim's order (a role swap "A inhibits B" / "B inhibits A")
    contradict_coverage: float = 0.7     # share carried before a polarity clash counts
    contradict_max_missing: int = 2
    direction_window: int = 3            # a direction word reads on a content word this many tokens away
    negation_window: int = 6             # a negation may stand this many tokens before the matched region
    contextual_quote_coverage: float = 0.34   # at most this share in the quote…
    contextual_passage_coverage: float = 0.3  # …and in the whole passage, for "contextual"
    prefix_min: int = 5                  # shared-prefix match: at least this many characters…
    prefix_ratio: float = 0.8            # …and this share of the shorter word


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class _Tok:
    text: str      # as tokenised (lower case)
    stem: str
    pos: int


@dataclass(frozen=True)
class _Reading:
    content: list[_Tok]                       # content words (not stopwords, cues or direction words)
    directions: list[tuple[str, int, int]]    # (axis, sign, pos)
    negations: list[tuple[str, int]]          # (cue, pos), strong cues
    weak_negations: list[int]                 # positions of weak cues ("without", "independent", …)
    hedges: list[int]
    numbers: set[str]


@dataclass(frozen=True)
class _Alignment:
    reading: _Reading
    matched: list[tuple[_Tok, _Tok]]          # claim token -> its match in the sentence
    missing: list[str]
    coverage: float
    in_order: bool


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"n['’]t\b", " not", text)
    text = text.replace("cannot", "can not")
    text = re.sub(r"\bnot only\b|\bno doubt\b|\bnot least\b", " ", text)  # not negations
    text = re.sub(r"\bwhether or not\b", " whether ", text)
    text = _COMPOUND.sub(r"\1", text)  # "damage-induced": one content word
    text = number_words_to_digits(text)  # "one in five" -> "1 in 5"
    return re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text)   # hyphenated words are read as two


def number_words_to_digits(text: str) -> str:
    """Number words of a lower-cased text as digits ("one in five" -> "1 in 5")."""
    return _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group()], text)


def light_stem(word: str) -> str:
    if _NUMBER.search(word) or len(word) <= 3:
        return word
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ness", ""), ("ings", ""), ("ing", ""),
                         ("edly", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            return word[: len(word) - len(suffix)] + repl
    return word


def direction_of(word: str) -> tuple[str, int] | None:
    if word in _NOT_DIRECTION:
        return None
    for prefix, axis, sign in _DIRECTION_PREFIXES:
        if word == prefix or (len(prefix) >= 4 and word.startswith(prefix)):
            return axis, sign
    return None


def _read(text: str) -> _Reading:
    words = TOKEN.findall(normalise(text))
    content: list[_Tok] = []
    directions, negations, weak, hedges, numbers = [], [], [], [], set()  # type: ignore[var-annotated]
    for pos, w in enumerate(words):
        nominal_not = w == "not" and pos + 1 < len(words) and words[pos + 1] in _NOMINAL_AFTER_NOT
        if w in NEGATIONS and not nominal_not:
            negations.append((w, pos))
        elif nominal_not or w in WEAK_NEGATIONS:
            weak.append(pos)
        elif w in HEDGES:
            hedges.append(pos)
        elif (d := direction_of(w)) is not None:
            directions.append((d[0], d[1], pos))
        elif w not in STOPWORDS and not _SYMBOL.fullmatch(w):
            content.append(_Tok(w, light_stem(w), pos))
            if _NUMBER.search(w):
                numbers.add(w.rstrip("%"))
    return _Reading(content, directions, negations, weak, hedges, numbers)


def _distinct(tokens: list[_Tok]) -> list[_Tok]:
    seen: set[str] = set()
    out = []
    for tok in tokens:
        if tok.stem not in seen:
            seen.add(tok.stem)
            out.append(tok)
    return out


def _sentences(text: str) -> list[str]:
    parts = [s.strip() for s in _SENTENCE.split(text or "")]
    return [s for s in parts if s]


class RuleBasedSupportVerifier:
    name = "rule-based-support"
    version = "v1"

    def __init__(self, params: RuleParams | None = None):
        self.params = params or RuleParams()

    # --- the SupportVerifier protocol -----------------------------------------------------------
    def judge(self, queries: Sequence[SupportQuery]) -> SupportJudgement:
        return SupportJudgement(verdicts=[self.explain(q.claim, q.quote, q.passage).verdict for q in queries])

    # --- matching ---------------------------------------------------------------------------------
    def _match(self, a: str, b: str) -> bool:
        if a == b:
            return True
        if _NUMBER.search(a) or _NUMBER.search(b):
            return False
        shorter = min(len(a), len(b))
        common = 0
        for x, y in zip(a, b):
            if x != y:
                break
            common += 1
        return common >= self.params.prefix_min and common >= self.params.prefix_ratio * shorter

    def _align(self, claim: _Reading, other: _Reading) -> _Alignment:
        matched, missing = [], []
        for tok in _distinct(claim.content):
            found = next((o for o in other.content if o.stem == tok.stem), None) or next(
                (o for o in other.content if self._match(tok.stem, o.stem)), None)
            if found is None:
                missing.append(tok.text)
            else:
                matched.append((tok, found))
        coverage = len(matched) / (len(matched) + len(missing)) if claim.content else 1.0
        in_order = self._in_order(claim, other) >= len(matched) + len(claim.directions)
        return _Alignment(other, matched, missing, coverage, in_order)

    def _in_order(self, claim: _Reading, other: _Reading) -> int:
        """Length of the longest common subsequence of the two texts' words, direction words included
        as their (axis, sign): "decreased with increasing dose" does not carry "increased with
        increasing dose" even though each word is there."""
        def sequence(reading: _Reading, distinct: bool) -> list[str]:
            words = _distinct(reading.content) if distinct else reading.content
            items = [(t.pos, t.stem) for t in words]
            items += [(pos, f"<{axis}{sign:+d}>") for axis, sign, pos in reading.directions]
            return [stem for _, stem in sorted(items)]

        a, b = sequence(claim, True), sequence(other, False)
        previous = [0] * (len(b) + 1)
        for x in a:
            current = [0]
            for j, y in enumerate(b, 1):
                same = x == y if x.startswith("<") or y.startswith("<") else self._match(x, y)
                current.append(previous[j - 1] + 1 if same else max(previous[j], current[j - 1]))
            previous = current
        return previous[-1]

    # --- directions ---------------------------------------------------------------------------------
    def _direction_readings(self, c: _Reading, s: _Reading) -> list[tuple[str, int, str]]:
        """For each direction word of the claim: (axis, sign, how the sentence reads it there) — "agree",
        "clash", "mixed" or "absent". The claim's direction word is anchored to its nearest content
        word; in the sentence, the direction word on the same axis nearest to that word's match decides."""
        window = self.params.direction_window
        out = []
        for axis, sign, pos in c.directions:
            if not c.content:
                out.append((axis, sign, "absent"))
                continue
            # the word it acts on: the next content word ("increases the risk"), else the previous one
            following = [t for t in c.content if 0 < t.pos - pos <= window]
            anchor = following[0] if following else min(c.content, key=lambda t: abs(t.pos - pos))
            before = pos < anchor.pos
            signs: set[int] = set()
            clash_same_side = True
            for o in s.content:
                if not self._match(anchor.stem, o.stem):
                    continue
                m = o.pos
                near = [(abs(sp - m), ss, sp < m) for sa, ss, sp in s.directions
                        if sa == axis and abs(sp - m) <= window]
                if near:
                    closest = min(d for d, _, _ in near)
                    for d, ss, side in near:
                        if d == closest:
                            signs.add(ss)
                            # a clash is read only on the word itself (not a prefix match: "panicprone" is
                            # not "panic") and on the same side of it as in the claim
                            if ss == -sign and (side != before or o.stem != anchor.stem):
                                clash_same_side = False
            if not signs:
                verdict = "absent"
            elif signs == {sign}:
                verdict = "agree"
            elif signs == {-sign}:
                # an antonym on the other side of the word may act on something else: not a clear clash
                verdict = "clash" if clash_same_side else "absent"
            else:
                verdict = "mixed"
            out.append((axis, sign, verdict))
        return out

    # --- the clearest case: the claim is a span of the quote ---------------------------------------
    def _verbatim(self, claim: str, quote: str) -> Decision | None:
        """`supports` when the claim is copied from the quote (whitespace and case aside) and nothing
        just around the copied span negates or hedges it; None to let the general rule decide."""
        c = " ".join(unicodedata.normalize("NFKC", claim).split()).rstrip(" .;:").casefold()
        q = " ".join(unicodedata.normalize("NFKC", quote).split()).casefold()
        found = re.search(r"(?<![\w])" + re.escape(c) + r"(?![\w])", q) if c else None
        if found is None:  # a span of whole words only: "rates rose" is not in "pirates rose"
            return None
        at = found.start()
        before = TOKEN.findall(normalise(q[:at]))[-8:]
        after = TOKEN.findall(normalise(q[at + len(c):]))[:3]
        around = set(before) | set(after)
        if around & (NEGATIONS | WEAK_NEGATIONS | HEDGES):
            return None
        return Decision("supports", "the claim is copied verbatim from the quote")

    # --- the rule ---------------------------------------------------------------------------------
    def explain(self, claim: str, quote: str, passage: str = "") -> Decision:
        p = self.params
        c = _read(claim)
        if len(_distinct(c.content)) + len(c.directions) < p.min_content or not c.content:
            return Decision("abstain", "claim too short to judge")
        sentences = _sentences(quote)
        if not sentences:
            return Decision("abstain", "no quote to judge against")
        verbatim = self._verbatim(claim, quote)
        if verbatim is not None:
            return verbatim
        whole = self._align(c, _read(quote))
        # the sentence of the quote that carries most of the claim (the earliest on a tie)
        best = max((self._align(c, _read(s)) for s in sentences), key=lambda a: a.coverage)
        s = best.reading
        readings = self._direction_readings(c, s)
        states = [state for _, _, state in readings]
        clash = [(a, g) for a, g, state in readings if state == "clash"]
        numbers_missing = sorted(c.numbers - s.numbers)

        # the part of the sentence that matches the claim: negations there are about the claim
        positions = [o.pos for _, o in best.matched]
        lo, hi = (min(positions) - p.negation_window, max(positions)) if positions else (0, -1)
        neg_near = [(cue, pos) for cue, pos in s.negations if lo <= pos <= hi]
        neg_before = [(cue, pos) for cue, pos in s.negations if pos < lo]  # "no evidence was found that …"
        weak_near = [pos for pos in s.weak_negations if lo <= pos <= hi]
        hedged = bool(s.hedges) and not c.hedges
        claim_cues = sorted(cue for cue, _ in c.negations)
        near_cues = sorted(cue for cue, _ in neg_near)
        agreeing_dir_pos = [sp for axis, sign, sp in s.directions
                            if any(a == axis and g == sign and st == "agree" for a, g, st in readings)]

        carried = (best.coverage >= p.contradict_coverage and len(best.missing) <= p.contradict_max_missing
                   and not numbers_missing and "mixed" not in states and not hedged)
        if carried:
            if (len(clash) == 1 and all(st in ("agree", "clash") for st in states) and not c.negations
                    and not s.negations and not weak_near):
                return Decision("contradicts", f"the claim says {_dir_words(clash)}, the quote the opposite")
            if not clash and all(st == "agree" for st in states):
                # the claim's one negation: all of the claim is carried, so it is not about a missing word
                if (len(c.negations) == 1 and not c.weak_negations and not s.negations and not s.weak_negations
                        and best.coverage == 1.0):
                    return Decision("contradicts", f"the claim is negated ({claim_cues[0]}), the quote is not")
                if not c.negations and not c.weak_negations and len(s.negations) == 1 and not s.weak_negations:
                    cue, at = s.negations[0]
                    # "did not (significantly) reduce", "was not associated with an increased risk"
                    if any(0 < dp - at <= p.negation_window for dp in agreeing_dir_pos):
                        return Decision("contradicts", f"the quote negates the claim's direction ({cue})")
                    # "is not effective": the negation right before a word of the claim, all of it carried
                    if (not readings and best.coverage == 1.0
                            and any(0 < o.pos - at <= 2 for _, o in best.matched)):
                        return Decision("contradicts", f"the quote negates the claim ({cue})")

        if (best.coverage >= p.support_coverage and len(best.missing) <= p.support_max_missing
                and not numbers_missing and not hedged and all(st == "agree" for st in states)
                and claim_cues == near_cues and not neg_before and (not weak_near or c.weak_negations)
                and (best.in_order or not p.support_in_order)):
            return Decision("supports", "one sentence of the quote carries every content word of the claim, "
                                        "in its direction and polarity")

        if whole.coverage <= p.contextual_quote_coverage:
            passage_cov = self._align(c, _read(passage)).coverage if passage else whole.coverage
            if passage_cov <= p.contextual_passage_coverage:
                return Decision("contextual", f"the quote carries {whole.coverage:.0%} of the claim's content "
                                              f"words, the passage {passage_cov:.0%}")
        detail = f"best sentence carries {best.coverage:.0%}"
        if best.missing:
            detail += f"; missing {', '.join(best.missing[:5])}"
        if numbers_missing:
            detail += f"; numbers not in the quote: {', '.join(numbers_missing[:5])}"
        unread = [(a, g) for a, g, st in readings if st != "agree"]
        if unread:
            how = ", ".join(st for st in states if st != "agree")
            detail += f"; direction {_dir_words(unread)} not confirmed ({how})"
        if hedged:
            detail += "; the quote hedges"
        if claim_cues != near_cues or neg_before:
            detail += "; negation differs or its scope is unclear"
        if not best.in_order:
            detail += "; word order differs"
        return Decision("abstain", detail)


def _dir_words(dirs: list[tuple[str, int]]) -> str:
    names = {"amount": ("more", "less"), "quality": ("better", "worse"),
             "sign": ("positive", "negative")}
    return ", ".join(names[axis][0 if sign > 0 else 1] for axis, sign in sorted(dirs))


__all__ = ["Decision", "RuleBasedSupportVerifier", "RuleParams"]
