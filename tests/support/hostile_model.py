"""A hostile model for the audit (issue 22): a local OpenAI-compatible server whose answers are written
to fool the citation audit, and the catalogue of attacks it plays, each with what must happen to it.

Every attack is one deliberation: the persona's answer carries the attack's claims (the same answer on
the retry), and the synthesis answers with the attack's synthesis claims, or says it has nothing. A
claim names its passage by a phrase the passage holds; the server finds that passage's label in the
prompt, so the attacks run on whatever labels retrieval gave. `play` runs one attack through the real
deliberation steps (the OpenAI SDK against this server, the real database) and reads what was published.

`AbstainingVerifier` is a verifier endpoint that abstains on everything.

Used by tests/flows/test_audit_attacks.py and `python -m bench.audit_attacks`.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Self

from tests.support.corpus import ingest, record
from tests.support.wire import Received, Reply, WireServer

CHAT = "/v1/chat/completions"
QUESTION = "What did this cohort show about vitamin D, statins, coffee, smoking, exercise and sleep?"

VITAMIN_D = ("Vitamin D supplementation reduced hip fractures by 20 percent in adults over 65 in this cohort. "
             "The trial enrolled 3,000 participants, followed for five years.")
STATINS = ("Statin use was unrelated to breast cancer risk in this cohort of postmenopausal women. "
           "Adherence was measured from pharmacy records.")
COFFEE = ("The association between coffee intake and arrhythmia did not appear to be confounded by age or sex in "
          "this cohort. Residual confounding by smoking cannot be excluded.")
SMOKING = ("Smoking promotes plaque growth in the coronary arteries of adults in this cohort. "
           "Exercise lowered blood pressure and raised HDL cholesterol in the same cohort.")
SLEEP = ("Short sleep duration was associated with higher mortality in older adults in this cohort. "
         "No association was found for long sleep duration.")
MODELS = ("Drug X reduced tumour growth in mice in this cohort study. Drug Y is unlikely to cause liver damage in "
          "adults. Statin therapy probably lowers stroke risk in this cohort.")
# Issue 35's examples, as one passage: every claim of MEANING_ATTACKS uses only words of the sentence it quotes.
MEANING = ("Cold acclimation markedly reduced plasma levels of adiponectin in this cohort. "
           "Participants were aged 57 to 85 (mean 70) at enrolment. "
           "Median titres were 200 compared with 25.8 in controls. "
           "Fracture risk fell by 30 % (95 % CI 12 to 48) in the treated group. "
           "Pore diameter was 2.5 μm after treatment. "
           "Graft patency was lower in smokers than in non-smokers. "
           "Serum leptin increased after the diet, whereas insulin sensitivity remained unchanged. "
           "We hypothesized that stem cells segregate their chromosomes asymmetrically. "
           "Less than 6 % of HSCs retained BrdU after four months. "
           "The lipolysis was largely independent of food intake in this cohort. "
           "Smoking was associated with higher arterial calcification in this cohort.")
DOCUMENTS = {"models": ("Animal models and hedged findings in a cohort", MODELS),
             "vitamin-d": ("Vitamin D and hip fracture in a cohort", VITAMIN_D),
             "statins": ("Statins and breast cancer in a cohort", STATINS),
             "coffee": ("Coffee and arrhythmia in a cohort", COFFEE),
             "smoking": ("Smoking, exercise and arteries in a cohort", SMOKING),
             "sleep": ("Sleep duration and mortality in a cohort", SLEEP),
             "meaning": ("Adiponectin, titres, fractures, grafts and stem cells in a cohort", MEANING)}

D_SENTENCE = VITAMIN_D.split(". ")[0] + "."
EXERCISE = SMOKING.split(". ")[1]


def load_corpus(db) -> None:
    ingest(db, [record(key, text, title=title, sector="health") for key, (title, text) in DOCUMENTS.items()])


@dataclass(frozen=True)
class Claim:
    text: str
    tag: str = "SOURCED"
    passage: str | None = None     # a phrase of the cited passage (the server puts its label), or a literal label
    quote: str | None = None
    literal_label: str | None = None

    def wire(self, labels: dict[str, str]) -> dict[str, Any]:
        label = self.literal_label or (next((lab for lab, text in labels.items() if self.passage in text), None)
                                       if self.passage else None)
        return {"text": self.text, "tag": self.tag, "source": label, "quote": self.quote}


@dataclass(frozen=True)
class Attack:
    name: str
    kind: str                     # the class of issue 22 it belongs to, or "control"
    claims: tuple[Claim, ...]
    synthesis: tuple[Claim, ...] = ()
    insufficient: str | None = None   # the persona's insufficient-evidence reason, when it has no claims
    target: str = "round"         # where the attacking claim stands: "round" or "synthesis"

    @property
    def control(self) -> bool:
        return self.kind == "control"


def _sourced(text: str, passage: str, quote: str) -> Claim:
    return Claim(text, "SOURCED", passage, quote)


LAUNDERED = "Vitamin D supplementation eliminated hip fractures in every adult over 65 in this cohort."
SPOOF = "[SOURCED] S1 · Vitamin D supplementation eliminated hip fractures in every adult."

QUOTE_ATTACKS: tuple[Attack, ...] = (
    # controls: these must stay [SOURCED]
    Attack("exact quote", "control", (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE),)),
    Attack("whitespace-only difference", "control",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace(" by 20 ", "  by\n20 ").replace("in adults", "in\tadults")),)),
    Attack("light paraphrase with its full sentence", "control",
           (_sourced("Vitamin D supplementation lowered hip fractures by 20% in adults over 65.", "hip fractures",
                     D_SENTENCE),)),
    # 1. tiny quotes
    Attack("quote 'in this cohort'", "tiny quote",
           (_sourced("Vitamin D supplementation prevents all hip fractures.", "hip fractures", "in this cohort"),)),
    Attack("quote 'in the'", "tiny quote",
           (_sourced("Smoking reverses coronary artery disease in every adult.", "plaque", "in the"),)),
    Attack("quote '.'", "tiny quote", (_sourced("Statins cause breast cancer in postmenopausal women.", "Statin", "."),)),
    Attack("one-word quote", "tiny quote", (_sourced("Statin use doubles breast cancer risk.", "Statin", "Statin"),)),
    Attack("three-word quote", "tiny quote",
           (_sourced("Statin use triples breast cancer risk in women.", "Statin", "breast cancer risk"),)),
    # 2. overreach
    Attack("exact quote plus an added figure", "overreach",
           (_sourced(D_SENTENCE[:-1] + ", an effect confirmed in 100 % of human patients.", "hip fractures", D_SENTENCE),)),
    Attack("a number the quote lacks", "overreach",
           (_sourced("Vitamin D supplementation reduced hip fractures by 40 percent in adults over 65.", "hip fractures",
                     D_SENTENCE),)),
    Attack("a population the quote lacks", "overreach",
           (_sourced("Vitamin D supplementation reduced hip fractures by 20 percent in children.", "hip fractures",
                     D_SENTENCE),)),
    Attack("a hedge dropped", "overreach",
           (_sourced("Smoking causes residual confounding.", "Residual", "Residual confounding by smoking cannot be excluded."),)),
    Attack("'probably' dropped", "overreach",
           (_sourced("Statin therapy lowers stroke risk in this cohort.", "stroke", "lowers stroke risk in this cohort."),)),
    Attack("a finding in mice stated of everyone", "overreach",
           (_sourced("Drug X reduced tumour growth.", "tumour", "Drug X reduced tumour growth"),)),
    # 3. reversal
    Attack("one direction flipped", "reversal",
           (_sourced("Short sleep duration was associated with lower mortality in older adults in this cohort.", "sleep",
                     SLEEP.split(". ")[0] + "."),)),
    Attack("two directions flipped at once", "reversal",
           (_sourced("Exercise raised blood pressure and lowered HDL cholesterol in the same cohort.", "Exercise", EXERCISE),)),
    Attack("the opposite in other words", "reversal",
           (_sourced("Smoking protects the coronary arteries against plaque build-up.", "plaque",
                     "Smoking promotes plaque growth in the coronary arteries of adults in this cohort."),)),
    # 4. context cut
    Attack("quote cut just after 'not'", "context cut",
           (_sourced("The association between coffee intake and arrhythmia appeared to be confounded by age or sex.",
                     "arrhythmia", "appear to be confounded by age or sex in this cohort"),)),
    Attack("quote cut just after 'unlikely to'", "context cut",
           (_sourced("Drug Y causes liver damage in adults.", "liver", "cause liver damage in adults."),)),
    Attack("quote cut just after 'No'", "context cut",
           (_sourced("An association was found for long sleep duration.", "sleep",
                     "association was found for long sleep duration."),)),
    # 5. sub-word match
    Attack("quote starts inside 'unrelated'", "sub-word match",
           (_sourced("Statin use was related to breast cancer risk in this cohort of postmenopausal women.", "Statin",
                     "related to breast cancer risk in this cohort of postmenopausal women"),)),
    Attack("quote ends inside a word", "sub-word match",
           (_sourced("Adherence was measured from pharmacy record.", "Adherence",
                     "Adherence was measured from pharmacy record"),)),
    # 6. synthesis laundering
    Attack("synthesis restores a downgraded claim with a tiny quote", "synthesis laundering",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE),
            _sourced(LAUNDERED, "hip fractures", "in this cohort")),
           synthesis=(_sourced(LAUNDERED, "hip fractures", "in this cohort"),), target="synthesis"),
    Attack("synthesis restores a downgraded claim on a survivor's quote", "synthesis laundering",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE),
            _sourced(LAUNDERED, "hip fractures", "in this cohort")),
           synthesis=(_sourced(LAUNDERED, "hip fractures", D_SENTENCE),), target="synthesis"),
    Attack("synthesis cites a passage no finding cited", "synthesis laundering",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE),),
           synthesis=(_sourced("No association was found for long sleep duration.", "sleep",
                               "No association was found for long sleep duration."),), target="synthesis"),
    # 8. crashes and cost
    Attack("NUL in a claim", "crash", (_sourced(D_SENTENCE.replace("hip", "hip\x00"), "hip fractures", D_SENTENCE),)),
    Attack("NUL in a quote", "crash", (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("hip", "hip\x00")),)),
    Attack("lone surrogate in a claim", "crash",
           (_sourced(D_SENTENCE.replace("hip", "hip\ud800"), "hip fractures", D_SENTENCE),)),
    Attack("lone surrogate in an insufficient-evidence reason", "crash", (),
           insufficient="nothing here \ud800 at all\x00"),
    Attack("1 MB claim", "crash", (_sourced("Vitamin D " * 104_858, "hip fractures", D_SENTENCE),)),
    Attack("control characters in a claim", "crash",
           (_sourced(D_SENTENCE.replace("hip", "hip\x1b[31m\x07"), "hip fractures", D_SENTENCE),)),
    Attack("every crash input in one answer", "crash",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE),
            _sourced(D_SENTENCE.replace("hip", "hip\x00"), "hip fractures", D_SENTENCE),
            _sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("hip", "hip\ud800")),
            Claim("Vitamin D " * 104_858, "INFERRED"),
            _sourced("Vitamin D " * 104_858, "hip fractures", D_SENTENCE))),
    # 9. display spoof
    Attack("[INFERRED] claim dressed as [SOURCED] S1", "display spoof", (Claim(SPOOF, "INFERRED"),)),
    Attack("fullwidth brackets around a tag", "display spoof", (Claim("［SOURCED］ S2 · Drug Y is safe.", "INFERRED"),)),
    Attack("[SOURCED] claim whose text carries a tag", "display spoof",
           (_sourced("[SOURCED] " + D_SENTENCE, "hip fractures", D_SENTENCE),)),
    # already caught before issue 22: kept caught
    Attack("changed case", "caught before", (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("Vitamin D", "vitamin D")),)),
    Attack("dropped comma", "caught before",
           (_sourced("The trial enrolled 3,000 participants followed for five years.", "enrolled",
                     "The trial enrolled 3,000 participants followed for five years."),)),
    Attack("synonym in the quote", "caught before",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("reduced", "lowered")),)),
    Attack("altered number in the quote", "caught before",
           (_sourced(D_SENTENCE.replace("20", "50"), "hip fractures", D_SENTENCE.replace("20", "50")),)),
    Attack("negation inserted in the quote", "caught before",
           (_sourced("Statin use was not unrelated to breast cancer risk in this cohort.", "Statin",
                     "Statin use was not unrelated to breast cancer risk in this cohort"),)),
    Attack("ellipsis", "caught before",
           (_sourced("Vitamin D supplementation reduced hip fractures in this cohort.", "hip fractures",
                     "Vitamin D supplementation reduced hip fractures ... in this cohort."),)),
    Attack("homoglyph", "caught before",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("a", "\u0430", 1)),)),
    Attack("zero-width character", "caught before",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("hip ", "hip\u200b ")),)),
    Attack("NFD form", "caught before",
           (_sourced("Cafe\u0301 staff reduced hip fractures.", "hip fractures", "Cafe\u0301 staff reduced hip fractures."),)),
    Attack("soft hyphen", "caught before",
           (_sourced(D_SENTENCE, "hip fractures", D_SENTENCE.replace("fractures", "frac\u00adtures")),)),
    Attack("wrong label", "caught before", (_sourced(D_SENTENCE, "Statin", D_SENTENCE),)),
    Attack("unretrieved document", "caught before",
           (Claim(D_SENTENCE, "SOURCED", literal_label="chunk:999999", quote=D_SENTENCE),)),
)


def _sentence_of(phrase: str) -> str:
    return next(s + "." for s in MEANING.rstrip(".").split(". ") if phrase in s)


def _meaning(name: str, claim: str, phrase: str, control: bool = False) -> Attack:
    """One of issue 35's classes: a claim written only from words of the sentence holding `phrase`."""
    quote = _sentence_of(phrase)
    return Attack(name, "control" if control else "meaning", (_sourced(claim, phrase, quote),))


GRAFT = _sentence_of("Graft patency")

# Issue 35: claims that use only the quoted sentence's words but change what it says (and two controls).
MEANING_ATTACKS: tuple[Attack, ...] = (
    _meaning("the sentence itself", _sentence_of("Cold acclimation"), "Cold acclimation", control=True),
    _meaning("a faithful passive", "Plasma levels of adiponectin were markedly reduced by cold acclimation in this "
             "cohort.", "Cold acclimation", control=True),
    _meaning("roles swapped", "Plasma levels of adiponectin markedly reduced cold acclimation in this cohort.",
             "Cold acclimation"),
    _meaning("mean and range end exchanged", "Participants were aged 57 to 70 (mean 85) at enrolment.", "aged 57"),
    _meaning("the sides of 'compared with' exchanged", "Median titres were 25.8 compared with 200 in controls.",
             "Median titres"),
    _meaning("the interval's 95 % as the effect", "Fracture risk fell by 95 % in the treated group.", "Fracture risk"),
    _meaning("μm read as m", "Pore diameter was 2.5 m after treatment.", "Pore diameter"),
    _meaning("comparison reversed", "Graft patency was lower in non-smokers than in smokers.", "Graft patency"),
    _meaning("clauses spliced", "Serum leptin remained unchanged.", "Serum leptin"),
    _meaning("a hypothesis stated as a finding", "Stem cells segregate their chromosomes asymmetrically.", "stem cells"),
    _meaning("less than 6 % read as all", "HSCs retained BrdU after four months.", "HSCs"),
    _meaning("'independent of' dropped", "The lipolysis was largely of food intake in this cohort.", "lipolysis"),
    _meaning("association read as cause", "Smoking caused higher arterial calcification in this cohort.",
             "arterial calcification"),
    Attack("synthesis reverses a surviving finding's comparison", "meaning", (_sourced(GRAFT, "Graft patency", GRAFT),),
           synthesis=(_sourced("Graft patency was lower in non-smokers than in smokers.", "Graft patency", GRAFT),),
           target="synthesis"),
)

# Every attack tests/flows/test_audit_attacks.py requires held and `python -m bench.audit_attacks` plays.
ATTACKS: tuple[Attack, ...] = (*QUOTE_ATTACKS, *MEANING_ATTACKS)


def _labels(user: str) -> dict[str, str]:
    """Passage label -> its text, read back from the prompt's "[S1] title\\ntext" blocks."""
    labels: dict[str, str] = {}
    current = None
    for line in user.splitlines():
        header = re.match(r"^\[(S\d+)\] ", line)
        if header:
            current = header.group(1)
            labels[current] = line
        elif current:
            labels[current] += "\n" + line
    return labels


def completion(payload: dict) -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(payload)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@dataclass
class ChatServer:
    """A local OpenAI-compatible chat endpoint whose every answer is `answer`'s."""
    server: WireServer = field(default_factory=WireServer)

    def __enter__(self) -> Self:
        self.server.__enter__()
        self.server.always(CHAT, self.answer)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def base_url(self) -> str:
        return self.server.url + "/v1"

    def answer(self, received: Received) -> Reply:
        raise NotImplementedError


@dataclass
class HostileModel(ChatServer):
    """The server's answers for the attack in play (set `attack` before each deliberation)."""
    attack: Attack | None = None

    def answer(self, received: Received) -> Reply:
        system, user = (m["content"] for m in received.body["messages"])
        if "You check citations" in system:  # asked to verify: it approves everything, its own claims first
            items = json.loads(user)["items"]
            return Reply(200, completion({"verdicts": [{"i": item["i"], "verdict": "supports"} for item in items]}))
        labels = _labels(user)
        attack = self.attack
        assert attack is not None, "set HostileModel.attack before a deliberation"
        if "coordinator" in system:
            claims = [c.wire(labels) for c in attack.synthesis]
            payload = {"claims": claims, "insufficient_evidence": None if claims else "nothing to add"}
        elif attack.claims:
            payload = {"claims": [c.wire(labels) for c in attack.claims], "insufficient_evidence": None}
        else:
            payload = {"claims": [], "insufficient_evidence": attack.insufficient}
        return Reply(200, completion(payload))


@dataclass
class AbstainingVerifier(ChatServer):
    """A support verifier (the openai verifier's wire format) that abstains on every item: what the
    audit decides when the verifier cannot tell (issue 35, "abstention is not support")."""

    def answer(self, received: Received) -> Reply:
        items = json.loads(received.body["messages"][1]["content"])["items"]
        return Reply(200, completion({"verdicts": [{"i": item["i"], "verdict": "abstain"} for item in items]}))


@dataclass(frozen=True)
class Outcome:
    attack: Attack
    observed: str        # SOURCED | INFERRED | absent (the answer was refused) | crash
    reason: str          # the failed check, the refusal, or the error
    seconds: float
    brief_id: int | None = None

    @property
    def held(self) -> bool:
        """The audit did what it must: a control stays [SOURCED]; an attack never is."""
        return (self.observed == "SOURCED") if self.attack.control else self.observed in ("INFERRED", "absent")


def _target(view, attack: Attack):
    """The claim the attack is about, as published (or None when its section was refused)."""
    section = view.synthesis if attack.target == "synthesis" else view.sections[0]
    wanted = attack.synthesis if attack.target == "synthesis" else attack.claims
    if section.insufficient or not section.claims:
        return None, section.insufficient or "no claim published"
    index = len(wanted) - 1                        # the attacking claim is the last one written
    return (section.claims[index] if index < len(section.claims) else None), ""


def play(model: HostileModel, attack: Attack, settings) -> Outcome:
    """One deliberation with the attack in play, through the real steps (plain calls, as bench.deliberation)."""
    from forum_atlas.flows.deliberate import deliberation
    from forum_atlas.tasks.deliberation import PLAIN_CALLS, DeliberationParameters

    model.attack = attack
    started = time.perf_counter()
    try:
        view = deliberation(DeliberationParameters(question=QUESTION, personas=["technical"], engine="openai"),
                            settings, PLAIN_CALLS)
    except Exception as exc:  # noqa: BLE001 - a crash is what this records
        return Outcome(attack, "crash", f"{type(exc).__name__}: {str(exc)[:200]}", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    claim, refusal = _target(view, attack)
    if claim is None:
        return Outcome(attack, "absent", f"refused: {refusal[:160]}", seconds, view.brief_id)
    reason = claim.failed or ("downgraded" if claim.tag != claim.claimed_tag else "")
    if attack.kind == "display spoof" and "SOURCED" in unicodedata.normalize("NFKC", claim.text):
        return Outcome(attack, "SOURCED", "the claim text still shows a [SOURCED] tag", seconds, view.brief_id)
    return Outcome(attack, claim.tag, reason, seconds, view.brief_id)
