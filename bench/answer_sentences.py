"""Does the offline engine quote the answer? Gold rationale sentences on SciFact dev claims (issue 36).

    python -m bench.answer_sentences               # the 300 dev claims; ~3 min on 2 cores at load 20
    python -m bench.answer_sentences --claims 100

Each SciFact dev claim is asked as a question over the full SciFact corpus, retrieval as the pipeline
does it (`bench.deliberation.retrieved_round`: the coordinator's plan, each persona's retrieval, the
round's labelled passages). The same requests then go to two extractive engines — this checkout's
and the one before issue 36 (`atlas/llm/offline_deliberation.py` at commit `BEFORE`, read from git) —
and each engine's drafts go through the real audit task (the database's verbatim rule, grounding,
the rules verifier). A brief's [SOURCED] quotes are its verified section claims (the synthesis only
repeats them). A brief hits when one of them is a gold rationale sentence of its claim
(claims_dev.jsonl `evidence`: sentence indices into the corpus.jsonl abstract). The gold evidence
is read only to score: the engines see the claim text and the retrieved passages, nothing else.

The table: briefs; briefs whose retrieved passages hold a rationale sentence at all (the ceiling for
any choice of sentence); rationale hits before and after, over all briefs and over the ceiling's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

from bench.report import load_line, markdown_table

ROOT = Path(__file__).resolve().parent.parent
ENGINE_FILE = "atlas/llm/offline_deliberation.py"
BEFORE = "5a9316cc"   # main when issue 36 was taken up: the engine that quoted the title


def engine_at(commit: str):
    """The offline engine as it was at `commit` (the file read from git, run against today's imports)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{ENGINE_FILE}"], check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"offline_deliberation_{commit}")
    exec(compile(source, f"{commit}:{ENGINE_FILE}", "exec"), module.__dict__)
    return module.OfflineDeliberationEngine()


def _normal(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".").lower()


def rationale_sentences(claims: list[dict], corpus: Path) -> dict[int, list[str]]:
    """Claim id -> its gold rationale sentences (claims without evidence are left out)."""
    wanted = {int(doc) for c in claims for doc in c["evidence"]}
    abstracts = {}
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if doc["doc_id"] in wanted:
                abstracts[doc["doc_id"]] = doc["abstract"]
    return {c["id"]: [_normal(abstracts[int(doc)][i]) for doc, sets in c["evidence"].items()
                      for s in sets for i in s["sentences"]]
            for c in claims if c["evidence"]}


def is_rationale(text: str, gold: list[str]) -> bool:
    """The quote is a rationale sentence, or one of its parts (sentence splitters differ on "e.g.")."""
    quote = _normal(text)
    return len(quote) >= 20 and any(quote in g or g in quote for g in gold)


def verified_quotes(settings, engine, panel, evidence, passages) -> list[str]:
    from forum_atlas.deliberation.model import DraftRequest
    from forum_atlas.tasks.deliberation import audit

    replies = {p.role: engine.draft(DraftRequest(panel.outbound_question, p, passages[p.role])) for p in panel.personas}
    audited = audit.fn(settings, replies, evidence, 1)
    return [c.quote for d in audited.drafts.values() for c in d.claims if c.verified and c.quote]


def measure(settings, claims: list[dict], gold: dict[int, list[str]], engines: dict) -> dict:
    from bench.deliberation import retrieved_round

    counts = {"briefs": 0, "ceiling": 0, **{name: 0 for name in engines}, **{f"{name}_sourced": 0 for name in engines}}
    for claim in claims:
        rationale = gold.get(claim["id"])
        if not rationale:
            continue
        panel, evidence, passages = retrieved_round(settings, claim["claim"])
        counts["briefs"] += 1
        counts["ceiling"] += any(is_rationale(s, rationale) for p in evidence.passages.values()
                                 for s in _sentences(p.text))
        for name, engine in engines.items():
            quotes = verified_quotes(settings, engine, panel, evidence, passages)
            counts[f"{name}_sourced"] += len(quotes)
            counts[name] += any(is_rationale(q, rationale) for q in quotes)
    return counts


def _sentences(text: str) -> list[str]:
    from forum_atlas.text import sentence_spans

    return [text[s:e] for s, e in sentence_spans(text)]


def report(r: dict, n_claims: int, seconds: float) -> str:
    briefs, ceiling = r["briefs"], max(r["ceiling"], 1)
    rows = [[f"before (main at {BEFORE}, sentences-v2)", r["before_sourced"], f"{r['before']} / {r['briefs']} ({r['before'] / briefs:.1%})",
             f"{r['before'] / ceiling:.1%}"],
            ["after (this checkout, sentences-v3)", r["after_sourced"], f"{r['after']} / {r['briefs']} ({r['after'] / briefs:.1%})",
             f"{r['after'] / ceiling:.1%}"]]
    return "\n".join([
        f"## Rationale hits: {briefs} briefs ({n_claims} SciFact dev claims, those with gold rationale sentences; "
        f"{seconds:.0f} s; {load_line()})", "",
        f"retrieved passages hold a rationale sentence (the ceiling): {r['ceiling']} / {briefs} ({r['ceiling'] / briefs:.1%})",
        "", markdown_table(["engine", "verified [SOURCED] quotes", "briefs quoting a rationale sentence",
                            "share of the ceiling"], rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=300, help="SciFact dev claims (the first N)")
    args = parser.parse_args(argv)
    os.environ.setdefault("ATLAS_EMBEDDER", "hashed")
    from bench.deliberation import SHARED, dev_claims, prepare_database
    from forum_atlas.llm import make_deliberation_engine

    claims = dev_claims(args.claims)
    gold = rationale_sentences(claims, SHARED / "original" / "corpus.jsonl")
    settings, _ = prepare_database()
    settings = replace(settings, embedder="hashed")
    engines = {"before": engine_at(BEFORE), "after": make_deliberation_engine("offline")}
    started = time.perf_counter()
    result = measure(settings, claims, gold, engines)
    print(report(result, len(claims), time.perf_counter() - started))
    return 0 if result["after"] > result["before"] else 1


if __name__ == "__main__":
    sys.exit(main())
