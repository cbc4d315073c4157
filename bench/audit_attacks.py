"""The audit against a hostile model, and what its strictness costs honest claims (issues 22, 35).

    python -m bench.audit_attacks                   # everything; ~5 min on 2 cores
    python -m bench.audit_attacks --quick           # 60 SciFact dev claims for the cost part
    python -m bench.audit_attacks --claims 100      # fewer SciFact dev claims for the cost part
    python -m bench.audit_attacks --parts classes --per-class 50   # only the attacks by class

1. Attacks: every attack of tests/support/hostile_model.py (a local OpenAI-compatible server whose
   answers are written to fool the audit, through the real SDK, the real deliberation steps and an
   embedded PostgreSQL), with the controls; issue 35's examples ("meaning") among them. A table of
   attack, class, expected, observed, reason.
2. The cost of strictness on the SciFact dev claims, over the full SciFact corpus: each claim asked
   as a question, retrieval as the pipeline does it, then
   - the offline engine's [SOURCED] claims (sentences copied from passages: honest by construction)
     audited by the real audit task (the database's verbatim rule, grounding, the rules verifier):
     how many the new rules downgrade, by reason;
   - a scripted "honest but sloppy" model built on the same sentences: quoting a fragment of the
     sentence, light paraphrase, an added framing phrase, a claim shorter than its sentence (honest);
     and overreach: an added figure, an added population, a stronger word, a flipped direction (not).
     For each: downgraded by the new rules, and by the rules before issue 22 (substring verbatim
     match plus the verifier) in the same run.
3. The quote minimum, measured: how many content words the honest quotes hold, and, for each
   minimum from 2 to 6, the honest quotes it would refuse.
4. Attacks by class (issue 35): bench.attack_generation writes, from real SciFact sentences, claims that
   use only the quoted sentence's words but change what it says (roles swapped, numbers re-bound, units
   changed, a comparison reversed, clauses spliced, modality dropped, a quantifier changed, polarity
   inverted, causal from associational, a synthesis re-wording a surviving finding), and honest controls
   of the same shapes (the whole sentence, a faithful deletion, a kept hedge, a reordered coordination, a
   passive). All go through the deliberation's audit task on a database holding their abstracts, once
   with the rules verifier and once with a verifier that abstains on everything. Per class: how many
   kept [SOURCED] (attacks: target 0; controls: target all).

The exit status is 1 when an attack survives, a control is lost, or the cost exceeds 10 %.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

from bench.report import load_line, markdown_table

ATTACK_DB = "atlas_bench_audit_attacks"
DEV_CLAIMS = 300
QUICK_CLAIMS = 60


# ---------------------------------------------------------------- 1. attacks

def run_attacks(home: Path) -> list:
    from bench.corpus_loading import fresh_database
    from forum_atlas.config import Settings
    from forum_atlas.runtime import pgserver
    from forum_atlas.store.db import Database
    from tests.support.hostile_model import ATTACKS, HostileModel, load_corpus, play

    url = fresh_database(pgserver.embedded_url(home / "pgdata"), ATTACK_DB)
    settings = Settings(database_url=url, data_dir=home, embedder="hashed", llm="openai")
    with Database.open(settings) as db:
        load_corpus(db)
    with HostileModel() as model:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = model.base_url, "sk-bench-not-a-secret"
        try:
            return [play(model, attack, settings) for attack in ATTACKS]
        finally:
            del os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]


def attacks_report(outcomes: list) -> str:
    rows = [[o.attack.kind, o.attack.name, "[SOURCED]" if o.attack.control else "not [SOURCED]",
             o.observed if o.observed != "absent" else "absent (answer refused)", o.reason[:90] or "-",
             f"{o.seconds:.2f}"] for o in outcomes]
    attacks = [o for o in outcomes if not o.attack.control]
    controls = [o for o in outcomes if o.attack.control]
    return "\n".join([
        markdown_table(["class", "attack", "expected", "observed", "reason", "s"], rows), "",
        (f"attacks: {len(attacks)}, surviving as [SOURCED]: {sum(not o.held for o in attacks)}; "
         f"crashes: {sum(o.observed == 'crash' for o in outcomes)}; "
         f"controls kept [SOURCED]: {sum(o.held for o in controls)} of {len(controls)}")])


# ---------------------------------------------------------------- 2. the cost of strictness

# Light paraphrase an honest model writes: words of the same meaning and direction.
_PARAPHRASE = (("reduced", "lowered"), ("decreased", "reduced"), ("increased", "raised"), ("higher", "greater"),
               ("patients", "participants"), ("was associated with", "is associated with"),
               ("significantly ", ""), ("were associated with", "are associated with"))
_DIRECTION_FLIP = (("increased", "decreased"), ("decreased", "increased"), ("reduced", "increased"),
                   ("higher", "lower"), ("lower", "higher"), ("improved", "worsened"), ("enhanced", "inhibited"),
                   ("promotes", "prevents"), ("inhibits", "promotes"))


def _pick(text: str, n: int) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % n


def sloppy_variants(sentence: str) -> list[tuple[str, bool, str, str]]:
    """(kind, honest, claim, quote) written from one real sentence."""
    body = sentence.rstrip(" .")
    words = sentence.split()
    out: list[tuple[str, bool, str, str]] = []
    if len(words) >= 10:
        cut = max(6, int(len(words) * 0.6))
        start = _pick(sentence, len(words) - cut + 1)
        out.append(("quotes a fragment of its sentence", True, sentence, " ".join(words[start:start + cut])))
    paraphrased = sentence
    for old, new in _PARAPHRASE:
        paraphrased = re.sub(rf"\b{re.escape(old)}", new, paraphrased)
    if paraphrased != sentence:
        out.append(("light paraphrase", True, paraphrased, sentence))
    out.append(("adds a framing phrase", True, "The study found that " + sentence[:1].lower() + sentence[1:], sentence))
    if "," in body and len(body.split(",")[0].split()) >= 6:
        out.append(("claims less than its sentence", True, body.split(",")[0] + ".", sentence))
    out.append(("overreach: an added figure", False, body + ", in 95 percent of cases.", sentence))
    out.append(("overreach: an added population", False, body + " in children and adolescents.", sentence))
    out.append(("overreach: a stronger word", False, "It is now proven that " + sentence[:1].lower() + sentence[1:],
                sentence))
    for old, new in _DIRECTION_FLIP:
        if re.search(rf"\b{old}\b", sentence):
            out.append(("overreach: a flipped direction", False, re.sub(rf"\b{old}\b", new, sentence, count=1), sentence))
            break
    # the attack classes again, written from real sentences: a tiny quote, a context cut, a sub-word match
    if len(words) >= 4:
        out.append(("attack: a three-word quote", False, body + ", and it cured every patient.", " ".join(words[1:4])))
    cut = re.search(r"\b(?:not|no)\s+(\w+(?:\s+\S+){5,})", sentence)
    if cut:
        out.append(("attack: a quote cut just after not/no", False,
                    re.sub(r"\b(?:not|no)\s+", "", sentence, count=1), cut.group(1)))
    inner = re.search(r"\b(?:un|in|non|dis)(\w{4,}(?:\s+\S+){4,})", sentence)
    if inner:
        out.append(("attack: a quote starting inside a word", False,
                    sentence[:inner.start()] + inner.group(1), inner.group(1)))
    return out


def _old_rules_keep(claim: str, quote: str, passage: str) -> bool:
    """The rules before issue 22: substring match, and the verifier neither contradicts nor calls it context."""
    from forum_atlas.deliberation.quotes import SUBSTRING_V1, quote_in_passage
    from forum_atlas.entailment import RuleBasedSupportVerifier

    verdict = RuleBasedSupportVerifier().explain(claim, quote, passage).verdict
    return quote_in_passage(quote, passage, SUBSTRING_V1) and verdict not in ("contradicts", "contextual")


def strictness(settings, claims: list[dict]) -> dict:
    from bench.deliberation import retrieved_round
    from forum_atlas.deliberation.grounding import informative_words
    from forum_atlas.deliberation.model import SOURCED, ClaimDraft, DraftReply, DraftRequest
    from forum_atlas.llm import make_deliberation_engine
    from forum_atlas.tasks.deliberation import audit

    engine = make_deliberation_engine("offline")
    offline = Counter()
    reasons: Counter = Counter()
    sloppy: dict[str, Counter] = {}
    quote_words: list[int] = []
    examples: dict[str, str] = {}
    for item in claims:
        panel, evidence, passages = retrieved_round(settings, item["claim"])
        replies = {p.role: engine.draft(DraftRequest(panel.outbound_question, p, passages[p.role]))
                   for p in panel.personas}
        audited = audit.fn(settings, replies, evidence, 1)
        for role, draft in audited.drafts.items():
            for claim in draft.claims:
                if claim.claimed_tag != SOURCED:
                    continue
                offline["sourced"] += 1
                quote_words.append(informative_words(claim.quote))
                if claim.tag != SOURCED:
                    offline["downgraded"] += 1
                    reasons[claim.failed] += 1
                    examples.setdefault(claim.failed, f"{claim.text[:140]!r}: {claim.detail[:120]}")
        # the sloppy model: variants of the offline engine's sentences, audited the same way
        variants = {}
        for role, reply in replies.items():
            for c in reply.claims:
                if c.tag == SOURCED:
                    for kind, honest, text, quote in sloppy_variants(c.quote):
                        variants[(role, kind, text)] = (honest, ClaimDraft(text, SOURCED, c.source_label, quote))
        by_role: dict[str, list] = {}
        for (role, kind, text), (honest, claim) in variants.items():
            by_role.setdefault(role, []).append((kind, text, honest, claim))
        sloppy_replies = {role: DraftReply(claims=[v[3] for v in vs], call=replies[role].call)
                          for role, vs in by_role.items()}
        if not sloppy_replies:
            continue
        judged = audit.fn(settings, sloppy_replies, evidence, 1)
        for role, written in by_role.items():
            for (kind, text, honest, claim), result in zip(written, judged.drafts[role].claims):
                _count_sloppy(sloppy, examples, evidence, kind, text, honest, claim, result)
    return {"offline": dict(offline), "reasons": dict(reasons), "sloppy": {k: dict(v) for k, v in sloppy.items()},
            "quote_words": quote_words, "examples": examples}


def _count_sloppy(sloppy, examples, evidence, kind, text, honest, claim, result) -> None:
    """One sloppy claim's fate under the new rules (`result`, the audit's) and the rules before."""
    passage = evidence.passages[claim.source_label].text
    row = sloppy.setdefault(kind, Counter(honest=honest))
    row["n"] += 1
    row["new_downgraded"] += result.tag != "SOURCED"
    row["old_downgraded"] += not _old_rules_keep(text, claim.quote, passage)
    if result.tag != "SOURCED" and honest:
        examples.setdefault(f"{kind} ({result.failed})", f"{text[:140]!r}: {result.detail[:120]}")
    elif result.tag == "SOURCED" and not honest:
        examples.setdefault(f"{kind}, kept [SOURCED] #{row['n']}", f"claim {text[:200]!r}; quote {claim.quote[:200]!r}")


def strictness_report(r: dict) -> str:
    o = r["offline"]
    share = o.get("downgraded", 0) / max(o.get("sourced", 1), 1)
    lines = [f"offline engine: {o.get('sourced', 0)} [SOURCED] claims written, {o.get('downgraded', 0)} downgraded by "
             f"the new rules ({share:.1%}; target <= 10 %); by reason: "
             + (", ".join(f"{k} {v}" for k, v in sorted(r["reasons"].items())) or "none"), ""]
    rows = []
    totals = Counter()
    for kind, row in sorted(r["sloppy"].items(), key=lambda kv: (not kv[1]["honest"], kv[0])):
        honest = row["honest"]
        rows.append([kind, "honest" if honest else "fabricated", row["n"],
                     f"{row['new_downgraded']} ({row['new_downgraded'] / row['n']:.1%})",
                     f"{row['old_downgraded']} ({row['old_downgraded'] / row['n']:.1%})"])
        key = "honest" if honest else "overreach"
        totals[f"{key}_n"] += row["n"]
        totals[f"{key}_new"] += row["new_downgraded"]
        totals[f"{key}_old"] += row["old_downgraded"]
    lines.append(markdown_table(["sloppy model's claim", "kind", "n", "downgraded, new rules", "downgraded, rules before"], rows))
    lines.append("")
    for key, what in (("honest", "honest claims downgraded (the cost)"), ("overreach", "overreach and attacks stopped")):
        n = max(totals[f"{key}_n"], 1)
        lines.append(f"{what}: new rules {totals[f'{key}_new']} of {totals[f'{key}_n']} ({totals[f'{key}_new'] / n:.1%}), "
                     f"rules before {totals[f'{key}_old']} ({totals[f'{key}_old'] / n:.1%})")
    words = r["quote_words"]
    if words:
        lines += ["", (f"content words per honest quote: median {statistics.median(words):.0f}, "
                       f"min {min(words)}; a minimum of N refuses:")]
        lines.append(markdown_table(["N", "honest quotes refused"],
                            [[n, f"{sum(w < n for w in words)} ({sum(w < n for w in words) / len(words):.2%})"]
                             for n in range(2, 7)]))
    if r["examples"]:
        lines += ["", "examples of honest claims downgraded, and of overreach that kept the tag:"]
        lines += [f"- {k}: {v}" for k, v in sorted(r["examples"].items())]
    return "\n".join(lines)


# ---------------------------------------------------------------- 4. attacks by class, from SciFact sentences

CLASS_DB = "atlas_bench_audit_classes"
PER_CLASS = 30
ROLE = "technical"


def class_settings(home: Path) -> object:
    """A fresh database on the bench's embedded server (offline engine, rules verifier)."""
    from bench.corpus_loading import fresh_database
    from forum_atlas.config import Settings
    from forum_atlas.runtime import pgserver

    url = fresh_database(pgserver.embedded_url(home / "pgdata"), CLASS_DB)
    return Settings(database_url=url, data_dir=home, embedder="hashed", llm="offline", support_verifier="rules")


def class_evidence(settings, pairs: list) -> tuple[object, dict[int, str]]:
    """The abstracts the pairs quote, written through the ingest write path (one chunk per abstract), the
    round's evidence over them, and each abstract's label."""
    from forum_atlas.deliberation.audit import RoundEvidence
    from forum_atlas.deliberation.model import Passage
    from forum_atlas.store.db import Database
    from tests.support.corpus import ingest, record

    abstracts = {p.sentence.doc_id: p.sentence for p in pairs}
    with Database.open(settings) as db:
        ingest(db, [record(f"scifact-{doc}", s.abstract, title=s.title, sector="health")
                    for doc, s in abstracts.items()])
        with db.connection() as conn:
            rows = conn.execute("""SELECT c.chunk_id, c.body, d.document_id, d.version, d.title, d.external_id
                                     FROM forum.chunks c JOIN forum.documents d USING (document_id)
                                    WHERE d.external_id = ANY (%s) ORDER BY c.chunk_id""",
                                ([f"scifact-{doc}" for doc in abstracts],)).fetchall()
    passages, label_of = {}, {}
    for n, row in enumerate(rows, 1):
        label = f"S{n}"
        passages[label] = Passage(label=label, chunk_id=row["chunk_id"], document_id=row["document_id"],
                                  document_version=row["version"], title=row["title"], text=row["body"],
                                  source_name="scifact")
        label_of[int(row["external_id"].removeprefix("scifact-"))] = label
    return RoundEvidence(passages), label_of


def _reply(claims: list) -> object:
    from forum_atlas.calls import CallRecord
    from forum_atlas.deliberation.model import DraftReply

    return DraftReply(claims=claims, call=CallRecord(stage="draft:bench", provider="bench attack generator",
                                                     version="issue-35", input_digest="-"))


def audit_round(settings, evidence, label_of: dict[int, str], pairs: list) -> list:
    """Every pair as one persona's [SOURCED] claim, through the deliberation's audit task (the database's
    verbatim rule, grounding, the configured support verifier): the published claims, in order."""
    from forum_atlas.deliberation.model import SOURCED, ClaimDraft
    from forum_atlas.tasks.deliberation import audit

    reply = _reply([ClaimDraft(p.claim, SOURCED, label_of[p.sentence.doc_id], p.quote) for p in pairs])
    return audit.fn(settings, {ROLE: reply}, evidence, 1).drafts[ROLE].claims


def audit_synthesis(settings, evidence, label_of: dict[int, str], pairs: list) -> tuple[list, int]:
    """The round's finding is the quoted sentence itself; the coordinator then re-words it (the attack)
    citing that finding's passage and quote. The synthesis's audited claims, and how many findings the
    round kept (the synthesis may cite only those)."""
    from forum_atlas.deliberation.audit import settle, synthesis_basis
    from forum_atlas.deliberation.model import COORDINATOR, SOURCED, ClaimDraft
    from forum_atlas.tasks.deliberation import audit

    findings = _reply([ClaimDraft(p.quote, SOURCED, label_of[p.sentence.doc_id], p.quote) for p in pairs])
    audited = audit.fn(settings, {ROLE: findings}, evidence, 1).drafts[ROLE]
    section = settle(ROLE, "attack bench", [audited], "bench")
    basis = synthesis_basis([section], [audited])
    rewording = _reply([ClaimDraft(p.claim, SOURCED, label_of[p.sentence.doc_id], p.quote) for p in pairs])
    judged = audit.fn(settings, {COORDINATOR: rewording}, evidence, 1, basis=basis).drafts[COORDINATOR].claims
    return judged, sum(c.tag == SOURCED for c in audited.claims)


def run_classes(home: Path, per_class: int, seed: int) -> dict:
    """Every class's pairs audited with the rules verifier and with a verifier that abstains on everything."""
    from bench.attack_generation import generate, load_sentences

    started = time.perf_counter()
    pairs = generate(load_sentences(), per_class, seed)
    generated_s = time.perf_counter() - started
    return audit_classes(class_settings(home), pairs) | {"generated_s": generated_s,
                                                         "seconds": time.perf_counter() - started}


def audit_classes(settings, pairs: dict[str, list]) -> dict:
    """Every class's pairs audited with the configured verifier ("rules") and with a verifier that abstains
    on everything ("abstains"), on `settings`' database."""
    from bench.attack_generation import SYNTHESIS
    from tests.support.hostile_model import AbstainingVerifier

    evidence, label_of = class_evidence(settings, [p for ps in pairs.values() for p in ps])
    results: dict[str, dict] = {}
    # the SDK needs a key; the local verifier ignores it (the caller's own key, if any, is restored after)
    with AbstainingVerifier() as abstaining, patch.dict(os.environ, {"OPENAI_API_KEY": "sk-bench-not-a-secret"}):
        verifiers = {"rules": settings,
                     "abstains": replace(settings, support_verifier="openai", support_model="abstains-on-everything",
                                         support_base_url=abstaining.base_url)}
        for name, written in pairs.items():
            row = results[name] = {"pairs": written}
            for verifier, configured in verifiers.items():
                if name == SYNTHESIS:
                    row[verifier], row["findings_kept"] = audit_synthesis(configured, evidence, label_of, written)
                else:
                    row[verifier] = audit_round(configured, evidence, label_of, written)
    return {"classes": results}


def classes_report(r: dict, examples_per_class: int = 1) -> tuple[str, int, int]:
    """The table by class, the first pairs the audit got wrong in each class (attacks kept, controls
    downgraded; the rules verifier's, then the abstaining one's where they differ), and
    (attack survivors, control verdicts lost)."""
    from bench.attack_generation import ATTACK_CLASSES, CONTROL_CLASSES

    def sourced(claims: list) -> int:
        return sum(c.tag == "SOURCED" for c in claims)

    rows, examples = [], []
    survivors = downgraded = 0
    totals = Counter()
    for name in (*ATTACK_CLASSES, *CONTROL_CLASSES):
        row = r["classes"][name]
        honest = name in CONTROL_CLASSES
        n, rules, abstains = len(row["pairs"]), sourced(row["rules"]), sourced(row["abstains"])
        reasons = Counter(c.failed for c in row["rules"] if c.failed)
        shown = ", ".join(f"{k} {v}" for k, v in reasons.most_common(3)) or "-"
        if name == "synthesis re-wording":
            shown += f"; findings kept {row['findings_kept']} of {n}"
        target = f"{n} kept" if honest else "0"
        rows.append([name, "control" if honest else "attack", n, rules, abstains, target, shown])
        if honest:
            downgraded += 2 * n - rules - abstains
        else:
            survivors += rules + abstains
            totals["n"] += n
            totals["abstains"] += abstains
        shown_claims: set[str] = set()
        for verifier in ("rules", "abstains"):
            wrong = [(p, c) for p, c in zip(row["pairs"], row[verifier])
                     if (c.tag == "SOURCED") != honest and p.claim not in shown_claims]
            for p, c in wrong[:examples_per_class]:
                shown_claims.add(p.claim)
                what = f"downgraded ({c.failed}: {c.detail[:120]})" if honest else "kept [SOURCED]"
                examples.append(f"- {name}, {verifier} verifier, {p.variant}: claim {p.claim[:200]!r} "
                                f"quoting {p.quote[:200]!r}: {what}")
    rows.append(["abstain keeps the tag (every attack above)", "attack", totals["n"], "-", totals["abstains"], "0",
                 "-"])
    table = markdown_table(["class", "kind", "pairs", "[SOURCED], rules verifier", "[SOURCED], verifier abstains",
                            "target", "rules verifier: first failed checks"], rows)
    lines = [table, "", f"attack survivors (both verifiers): {survivors}; control verdicts lost: {downgraded}"]
    if examples:
        lines += ["", f"the first {examples_per_class} pair(s) of each class the audit got wrong:", *examples]
    return "\n".join(lines), survivors, downgraded


PARTS = ("attacks", "classes", "cost")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=DEV_CLAIMS, help="SciFact dev claims for the cost part")
    parser.add_argument("--per-class", type=int, default=PER_CLASS, help="pairs per class in part 4")
    parser.add_argument("--seed", type=int, default=35, help="the order SciFact sentences are read in (part 4)")
    parser.add_argument("--examples", type=int, default=1, help="pairs the audit got wrong to show per class (part 4)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CLAIMS} dev claims for the cost part")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts to run, of {', '.join(PARTS)}")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS) or args.per_class < 1:
        parser.error(f"--parts takes {', '.join(PARTS)}; --per-class at least 1")
    claims = QUICK_CLAIMS if args.quick else args.claims
    os.environ.setdefault("ATLAS_EMBEDDER", "hashed")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support, when run from elsewhere
    from bench.deliberation import dev_claims, prepare_database

    home = Path(os.environ.get("ATLAS_BENCH_DATA_DIR", "/tmp/atlas-bench-deliberation"))
    print(load_line(), flush=True)
    failed = False
    if "attacks" in parts:
        started = time.perf_counter()
        outcomes = run_attacks(home)
        print(f"## Attacks ({time.perf_counter() - started:.1f} s)\n\n{attacks_report(outcomes)}\n", flush=True)
        failed |= any(not o.held for o in outcomes)
    if "classes" in parts:
        result = run_classes(home, args.per_class, args.seed)
        report, survivors, downgraded = classes_report(result, args.examples)
        print(f"## Attacks by class, from SciFact sentences (issue 35): --per-class {args.per_class} "
              f"--seed {args.seed} ({result['seconds']:.1f} s, of which generating {result['generated_s']:.1f} s)"
              f"\n\n{report}\n", flush=True)
        failed |= survivors > 0 or downgraded > 0
    if "cost" in parts:
        settings, _ = prepare_database()
        settings = replace(settings, embedder="hashed")
        started = time.perf_counter()
        result = strictness(settings, dev_claims(claims))
        print(f"## The cost of strictness: {claims} SciFact dev claims ({time.perf_counter() - started:.1f} s)\n\n"
              f"{strictness_report(result)}")
        o = result["offline"]
        failed |= o.get("downgraded", 0) > 0.10 * o.get("sourced", 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
