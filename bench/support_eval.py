"""Support-direction quality of a verifier (DEL-8, EVB-4) on SciFact claim–abstract pairs.

    python -m bench.support_eval                     # rule-based verifier, dev split
    python -m bench.support_eval --split train       # the split to tune rules on
    python -m bench.support_eval --verifier openai   # OPENAI_API_KEY (+ OPENAI_BASE_URL, --model)
    python -m bench.support_eval --json              # the figures as JSON

Pairs (one per claim × abstract):
- SUPPORT / CONTRADICT: every evidence abstract of a claim, with its label. The quote is the union
  of the abstract's rationale sentences, in abstract order, joined with a space; the passage is the
  whole abstract (title not included).
- NOT ENOUGH INFO: every cited abstract of a claim that has no evidence for it. It has no rationale,
  so the quote is the abstract sentence sharing the most content words with the claim (the earliest
  on a tie) — the sentence a persona would most plausibly have quoted. Expected verdict: contextual.

Figures: per label precision / recall (SUPPORT↔supports, CONTRADICT↔contradicts, NEI↔contextual),
the abstention rate, the gold × verdict confusion table, and the contract's figure, "support-direction
precision where it commits": correct verdicts / (supports + contradicts verdicts) over the SUPPORT and
CONTRADICT pairs. Because a `supports` on an NEI pair is the error that would keep a fabricated
SOURCED tag, "commit precision, all pairs" (the same ratio with NEI pairs counted as errors) is
reported beside it.

Stress checks (the product's own situation, where a persona copies its quote): every rationale
sentence of the split as its own claim (expected: supports), and the same sentence made false by one
edit — an antonym swapped in or a negation added or removed (expected: never supports).

The seed's contract (EVB-4) asks for >= 98 % direction precision; with few
commitments a perfect sample promises little, so the Wilson 95 % lower bound is printed too.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forum_atlas.entailment.base import SupportQuery, SupportVerifier

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact" / "original"
GOLD = ("SUPPORT", "CONTRADICT", "NEI")
EXPECTED = {"SUPPORT": "supports", "CONTRADICT": "contradicts", "NEI": "contextual"}
VERDICT_COLUMNS = ("supports", "contradicts", "contextual", "abstain")
CONTRACT_DIRECTION_PRECISION = 0.98

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("""a an the of in on at to for by with and or is are was were be been being as that this these
those from into than then it its their there which who whom what when where while not no can may might
could would should will shall do does did has have had we our us they them he she his her also""".split())


@dataclass(frozen=True)
class Pair:
    claim_id: int
    doc_id: int
    gold: str          # SUPPORT | CONTRADICT | NEI
    claim: str
    quote: str
    passage: str


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def load_pairs(data_dir: Path | str = DATA, split: str = "dev") -> list[Pair]:
    data_dir = Path(data_dir)
    if (data_dir / "original").is_dir():  # accept the scifact folder as well as scifact/original
        data_dir = data_dir / "original"
    corpus: dict[int, dict[str, Any]] = {}
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[int(doc["doc_id"])] = doc
    pairs: list[Pair] = []
    with (data_dir / f"claims_{split}.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            claim = json.loads(line)
            evidence = {int(k): v for k, v in claim.get("evidence", {}).items()}
            for doc_id, sets in sorted(evidence.items()):
                sentences = corpus[doc_id]["abstract"]
                labels = {s["label"] for s in sets}
                if len(labels) != 1:
                    continue  # an abstract that both supports and contradicts: no single gold direction
                indexes = sorted({i for s in sets for i in s["sentences"]})
                pairs.append(Pair(claim["id"], doc_id, labels.pop(), claim["claim"],
                                  " ".join(sentences[i] for i in indexes), " ".join(sentences)))
            for doc_id in claim.get("cited_doc_ids", []):
                if int(doc_id) in evidence:
                    continue
                sentences = corpus[int(doc_id)]["abstract"]
                words = _content(claim["claim"])
                best = max(range(len(sentences)), key=lambda i: (len(words & _content(sentences[i])), -i))
                pairs.append(Pair(claim["id"], int(doc_id), "NEI", claim["claim"], sentences[best],
                                  " ".join(sentences)))
    return pairs


# One-word edits that make a rationale sentence false about itself: a direction swapped for its
# antonym, or a negation added or removed. Only the first edit that applies is made.
PERTURBATIONS: tuple[tuple[str, str], ...] = (
    ("increased", "decreased"), ("decreased", "increased"), ("higher", "lower"), ("lower", "higher"),
    ("reduced", "increased"), ("increases", "decreases"), ("reduces", "increases"), ("inhibits", "promotes"),
    ("positively", "negatively"), ("was associated", "was not associated"), ("is associated", "is not associated"),
    ("were associated", "were not associated"), ("did not", "did"), ("was not", "was"),
    ("no significant", "a significant"), ("improved", "worsened"),
)


def stress_pairs(data_dir: Path | str = DATA, split: str = "dev") -> tuple[list[Pair], list[Pair]]:
    """The product's own situation, built from the split's rationale sentences: (verbatim, perturbed).
    Verbatim: the sentence is the claim and the quote (expected: supports). Perturbed: the claim is
    the sentence with one edit from PERTURBATIONS, the quote the original (expected: never supports)."""
    data_dir = Path(data_dir)
    if (data_dir / "original").is_dir():
        data_dir = data_dir / "original"
    corpus: dict[int, list[str]] = {}
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[int(doc["doc_id"])] = doc["abstract"]
    verbatim: list[Pair] = []
    perturbed: list[Pair] = []
    seen: set[tuple[int, int]] = set()
    with (data_dir / f"claims_{split}.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            claim = json.loads(line)
            for doc_id, sets in sorted(claim.get("evidence", {}).items()):
                sentences = corpus[int(doc_id)]
                for index in sorted({i for s in sets for i in s["sentences"]}):
                    if (int(doc_id), index) in seen:
                        continue
                    seen.add((int(doc_id), index))
                    sentence, passage = sentences[index], " ".join(sentences)
                    verbatim.append(Pair(claim["id"], int(doc_id), "SUPPORT", sentence, sentence, passage))
                    for old, new in PERTURBATIONS:
                        edited, n = re.subn(rf"\b{old}\b", new, sentence, count=1)
                        if n:
                            perturbed.append(Pair(claim["id"], int(doc_id), "CONTRADICT", edited, sentence, passage))
                            break
    return verbatim, perturbed


def _judge(verifier: SupportVerifier, pairs: Sequence[Pair], batch_size: int) -> tuple[list[str], int]:
    verdicts: list[str] = []
    calls = 0
    for batch in _batches(pairs, batch_size):
        judgement = verifier.judge([SupportQuery(p.claim, p.quote, p.passage) for p in batch])
        if len(judgement.verdicts) != len(batch):
            raise RuntimeError(f"{verifier.name} returned {len(judgement.verdicts)} verdicts for {len(batch)} queries")
        verdicts.extend(judgement.verdicts)
        calls += len(judgement.calls)
    return verdicts, calls


def _batches(items: Sequence[Pair], size: int) -> Iterator[Sequence[Pair]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def wilson_low(correct: int, n: int, z: float = 1.96) -> float | None:
    """Lower end of the Wilson 95 % interval for a proportion: what a small sample can promise."""
    if n == 0:
        return None
    p = correct / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def score(golds: Sequence[str], verdicts: Sequence[str]) -> dict[str, Any]:
    confusion = {g: {v: 0 for v in VERDICT_COLUMNS} for g in GOLD}
    for gold, verdict in zip(golds, verdicts, strict=True):
        confusion[gold][verdict] += 1
    per_label = {}
    for gold in GOLD:
        verdict = EXPECTED[gold]
        hit = confusion[gold][verdict]
        predicted = sum(confusion[g][verdict] for g in GOLD)
        total = sum(confusion[gold].values())
        per_label[gold] = {"verdict": verdict, "precision": _ratio(hit, predicted), "recall": _ratio(hit, total),
                           "predicted": predicted, "gold": total, "correct": hit}
    directional = [g for g in GOLD if g != "NEI"]
    dir_correct = confusion["SUPPORT"]["supports"] + confusion["CONTRADICT"]["contradicts"]
    dir_commits = sum(confusion[g][v] for g in directional for v in ("supports", "contradicts"))
    all_commits = sum(confusion[g][v] for g in GOLD for v in ("supports", "contradicts"))
    n = len(golds)
    abstained = sum(confusion[g]["abstain"] for g in GOLD)
    return {
        "pairs": n,
        "per_label": per_label,
        "confusion": confusion,
        "abstention_rate": _ratio(abstained, n),
        "abstained": abstained,
        "direction_precision_where_committed": _ratio(dir_correct, dir_commits),
        "direction_commits": dir_commits,
        "direction_precision_wilson_low": wilson_low(dir_correct, dir_commits),
        "direction_coverage": _ratio(dir_commits, sum(sum(confusion[g].values()) for g in directional)),
        "commit_precision_all_pairs": _ratio(dir_correct, all_commits),
        "supports_on_nei": confusion["NEI"]["supports"],
        "contract_direction_precision": CONTRACT_DIRECTION_PRECISION,
    }


def evaluate(verifier: SupportVerifier, data_dir: Path | str = DATA, *, split: str = "dev",
             batch_size: int = 32, stress: bool = True) -> dict[str, Any]:
    """Run `verifier` over the split's pairs and return the figures (see the module docstring).
    `stress` adds the verbatim / perturbed checks built from the same split (see `stress_pairs`)."""
    pairs = load_pairs(data_dir, split)
    start = time.perf_counter()
    verdicts, calls = _judge(verifier, pairs, batch_size)
    result = score([p.gold for p in pairs], verdicts)
    if stress:
        verbatim, perturbed = stress_pairs(data_dir, split)
        v_verdicts, v_calls = _judge(verifier, verbatim, batch_size)
        p_verdicts, p_calls = _judge(verifier, perturbed, batch_size)
        calls += v_calls + p_calls
        result["stress"] = {
            "verbatim": {"pairs": len(verbatim), **Counter(v_verdicts),
                         "supports_rate": _ratio(v_verdicts.count("supports"), len(verbatim))},
            "perturbed": {"pairs": len(perturbed), **Counter(p_verdicts),
                          "false_supports": p_verdicts.count("supports"),
                          "contradicts_rate": _ratio(p_verdicts.count("contradicts"), len(perturbed))},
        }
    result.update(verifier=f"{verifier.name} {verifier.version}", split=split, seconds=time.perf_counter() - start,
                  provider_calls=calls)
    return result


def _pct(value: float | None) -> str:
    return "   n/a" if value is None else f"{100 * value:5.1f}%"


def render(result: dict[str, Any]) -> str:
    lines = [(f"support_eval — {result['verifier']} — SciFact {result['split']} ({result['pairs']} pairs, "
             f"{result['seconds']:.1f} s)"), "",
             "label       verdict       precision  recall   predicted  gold"]
    for gold, row in result["per_label"].items():
        lines.append(f"{gold:<11} {row['verdict']:<12}  {_pct(row['precision'])}    {_pct(row['recall'])}  "
                     f"{row['predicted']:>9}  {row['gold']:>4}")
    lines += ["", "gold \\ verdict  " + "".join(f"{v:>12}" for v in VERDICT_COLUMNS)]
    for gold, row in result["confusion"].items():
        lines.append(f"{gold:<15} " + "".join(f"{row[v]:>12}" for v in VERDICT_COLUMNS))
    direction = result["direction_precision_where_committed"]
    low = result["direction_precision_wilson_low"]
    if direction is None:
        verdict = "n/a"
    elif direction < CONTRACT_DIRECTION_PRECISION:
        verdict = "BELOW the >= 98 % contract"
    elif low is not None and low < CONTRACT_DIRECTION_PRECISION:
        verdict = f"at the contract on this sample; 95 % lower bound {100 * low:.1f}%"
    else:
        verdict = "meets the >= 98 % contract"
    lines += [
        "",
        f"abstention rate                                   {_pct(result['abstention_rate'])}",
        (f"support-direction precision where it commits      {_pct(direction)}  "
        f"({result['direction_commits']} commits; {verdict})"),
        f"direction coverage (commits / SUPPORT+CONTRADICT)  {_pct(result['direction_coverage'])}",
        (f"commit precision over all pairs (NEI = error)     {_pct(result['commit_precision_all_pairs'])}  "
        f"(supports on NEI pairs: {result['supports_on_nei']})"),
    ]
    stress = result.get("stress")
    if stress:
        v, p = stress["verbatim"], stress["perturbed"]
        lines += [
            "",
            (f"stress, verbatim (rationale sentence = claim = quote, {v['pairs']} pairs): supports "
            f"{_pct(v['supports_rate'])}"),
            (f"stress, perturbed (one antonym/negation edit, {p['pairs']} pairs): supports {p['false_supports']} "
            f"(must be 0), contradicts {_pct(p['contradicts_rate'])}, abstain {p.get('abstain', 0)}, "
            f"contextual {p.get('contextual', 0)}"),
        ]
    return "\n".join(lines)


def _make_verifier(args: argparse.Namespace) -> SupportVerifier:
    if args.verifier == "rule":
        from forum_atlas.entailment.rules import RuleBasedSupportVerifier

        return RuleBasedSupportVerifier()
    from forum_atlas.entailment.openai_verifier import OpenAISupportVerifier

    return OpenAISupportVerifier(model=args.model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=("dev", "train"))
    parser.add_argument("--data-dir", default=str(DATA))
    parser.add_argument("--verifier", default="rule", choices=("rule", "openai"))
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--no-stress", action="store_true", help="skip the verbatim / perturbed checks")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = evaluate(_make_verifier(args), args.data_dir, split=args.split, batch_size=args.batch_size,
                      stress=not args.no_stress)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
