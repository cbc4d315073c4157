"""A real model behind the OpenAI-compatible path (issue 38): opt-in, never in CI.

    python -m bench.real_model --base-url http://127.0.0.1:8080/v1 --model qwen2.5-0.5b-instruct [--claims 10]

For the first N SciFact dev claims that cite abstracts, one persona draft is asked of the model with
the claim as the question and the cited abstracts as passages S1…, through the product's engine
(`OpenAIDeliberationEngine`: JSON schema or its fallback, the prompt budget, the per-claim reading)
and the product's audit (`audit_reply`, with the verbatim rule in Python — the twin of the database's
`forum.citation_verbatim_matches` — and the default rule-based support verifier). Figures per ask:
the answer was read (parsed, and whether it would have been under the old all-or-nothing rule),
claims kept by the reader, SOURCED claims written, SOURCED claims the audit kept, seconds. The
offline extractive engine on the same claims and the same audit is the reference row of the same run.

Defaults are the local CPU profile (`forum_atlas.config.LOCAL_CPU_PROFILE`); `--timeout-s`,
`--max-tokens`, `--context-tokens` override it. A model server is not started here: docs/local-llm.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.report import load_line, markdown_table, table
from forum_atlas.config import LOCAL_CPU_PROFILE, LLMOptions
from forum_atlas.deliberation.audit import RoundEvidence, audit_reply, support_pairs, verbatim_pairs
from forum_atlas.deliberation.engine import DeliberationEngine
from forum_atlas.deliberation.model import SOURCED, DraftReply, DraftRequest, Passage, PersonaAssignment
from forum_atlas.deliberation.quotes import quote_in_passage
from forum_atlas.entailment.base import SupportQuery
from forum_atlas.entailment.rules import RuleBasedSupportVerifier
from forum_atlas.llm.offline_deliberation import OfflineDeliberationEngine
from forum_atlas.providers import ProviderError

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "scifact" / "original"
ROLE = "technical"


@dataclass
class Ask:
    claim_id: int
    parsed: bool              # the reader kept something (claims, or an honest insufficiency)
    parsed_old_rule: bool     # nothing in the answer was dropped or downgraded (the pre-issue-38 rule)
    claims: int               # claims the reader kept
    sourced_written: int      # SOURCED claims as the model wrote them, after the reader
    sourced_kept: int         # SOURCED claims the audit let through
    seconds: float
    outcome: str              # the call's outcome (ok, degraded, bad_response, timeout, …)
    detail: str = ""


def scifact_requests(data_dir: Path, n: int) -> list[tuple[int, DraftRequest]]:
    """The first `n` dev claims with cited abstracts, as (claim id, persona draft request)."""
    corpus: dict[int, dict[str, Any]] = {}
    with (data_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[int(doc["doc_id"])] = doc
    requests = []
    with (data_dir / "claims_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            claim = json.loads(line)
            cited = [int(d) for d in claim.get("cited_doc_ids", []) if int(d) in corpus]
            if not cited:
                continue
            passages = tuple(Passage(label=f"S{k}", chunk_id=doc_id, document_id=doc_id, document_version=1,
                                     title=corpus[doc_id]["title"], text=" ".join(corpus[doc_id]["abstract"]),
                                     source_name="SciFact")
                             for k, doc_id in enumerate(cited, 1))
            persona = PersonaAssignment(role=ROLE, topic="the evidence for and against the claim",
                                        focus_query=claim["claim"], reason="the question is a biomedical claim")
            requests.append((int(claim["id"]), DraftRequest(question=f"Is this claim supported? {claim['claim']}",
                                                            persona=persona, passages=passages)))
            if len(requests) == n:
                break
    return requests


def audit_one(reply: DraftReply, passages: tuple[Passage, ...]) -> int:
    """SOURCED claims the product's audit keeps (verbatim rule in Python, rule-based verifier)."""
    evidence = RoundEvidence({p.label: p for p in passages})
    pairs = verbatim_pairs([reply], evidence)
    verbatim = {(chunk, quote): quote_in_passage(quote, evidence.by_chunk[chunk].text) for chunk, quote in pairs}
    to_judge = support_pairs([reply], evidence, verbatim)
    judged = RuleBasedSupportVerifier().judge([SupportQuery(claim, quote, evidence.by_chunk[chunk].text)
                                               for claim, chunk, quote in to_judge]).verdicts if to_judge else []
    audited = audit_reply(ROLE, 1, reply, evidence, verbatim, dict(zip(to_judge, judged)))
    return sum(c.tag == SOURCED for c in audited.claims)


def ask(engine: DeliberationEngine, request: DraftRequest, claim_id: int) -> Ask:
    start = time.perf_counter()
    try:
        reply = engine.draft(request)
    except ProviderError as exc:
        return Ask(claim_id, False, False, 0, 0, 0, time.perf_counter() - start, exc.kind, exc.detail[:200])
    seconds = time.perf_counter() - start
    parsed = reply.malformed is None
    return Ask(claim_id, parsed, parsed and reply.call.outcome == "ok", len(reply.claims),
               sum(c.tag == SOURCED for c in reply.claims), audit_one(reply, request.passages) if parsed else 0,
               seconds, reply.call.outcome, reply.call.detail[:200])


def summary_row(name: str, asks: list[Ask]) -> list[object]:
    n = len(asks)
    return [name, n, f"{sum(a.parsed for a in asks)}/{n}", f"{sum(a.parsed_old_rule for a in asks)}/{n}",
            sum(a.claims for a in asks), sum(a.sourced_written for a in asks), sum(a.sourced_kept for a in asks),
            f"{statistics.median(a.seconds for a in asks):.1f}" if asks else "",
            f"{max((a.seconds for a in asks), default=0):.1f}"]


HEADERS = ["engine", "asks", "parsed", "parsed (old rule)", "claims kept", "SOURCED written",
           "SOURCED kept by audit", "s/ask median", "s/ask max"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the server's OpenAI-compatible root, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="local", help="the model name the server expects (and the row names)")
    parser.add_argument("--claims", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DATA, help="SciFact's original folder (corpus.jsonl, claims_dev.jsonl)")
    parser.add_argument("--timeout-s", type=float, default=LOCAL_CPU_PROFILE.timeout_s)
    parser.add_argument("--max-tokens", type=int, default=LOCAL_CPU_PROFILE.max_tokens)
    parser.add_argument("--context-tokens", type=int, default=LOCAL_CPU_PROFILE.context_tokens)
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="start no ask after this many minutes (a slow CPU); the table says how many were asked")
    parser.add_argument("--json", action="store_true", help="every ask as JSON lines after the table")
    args = parser.parse_args(argv)
    data = args.data / "original" if (args.data / "original").is_dir() else args.data
    if not (data / "claims_dev.jsonl").is_file():
        print(f"no SciFact claims_dev.jsonl under {data}", file=sys.stderr)
        return 2
    from forum_atlas.llm.openai_deliberation import OpenAIDeliberationEngine

    options: LLMOptions = replace(LOCAL_CPU_PROFILE, timeout_s=args.timeout_s, max_tokens=args.max_tokens,
                                  context_tokens=args.context_tokens)
    engine = OpenAIDeliberationEngine(model=args.model, api_key=os.environ.get("OPENAI_API_KEY") or "local",
                                      base_url=args.base_url, options=options)
    requests = scifact_requests(data, args.claims)
    offline = [ask(OfflineDeliberationEngine(), request, claim_id) for claim_id, request in requests]
    print(f"# real model: {args.model} at {args.base_url}; {options}; {load_line()}", flush=True)
    asks = []
    started = time.perf_counter()
    for claim_id, request in requests:
        if args.max_minutes is not None and time.perf_counter() - started > args.max_minutes * 60:
            print(f"stopped after {len(asks)} of {len(requests)} asks: --max-minutes {args.max_minutes:g} passed")
            break
        result = ask(engine, request, claim_id)
        asks.append(result)
        print(f"ask {len(asks)}/{len(requests)}: {result.outcome} claims={result.claims} "
              f"sourced={result.sourced_written}->{result.sourced_kept} {result.seconds:.1f}s {result.detail[:120]}",
              flush=True)
    rows = [summary_row(f"openai:{args.model}", asks), summary_row("offline (reference)", offline[:len(asks)])]
    print(table(HEADERS, rows))
    print()
    print(markdown_table(HEADERS, rows))
    print(f"\n{load_line()}; response_format level: {engine.chat.format_level()}")
    if args.json:
        for a in asks:
            print(json.dumps(a.__dict__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
