"""`atlas search "…"`: hybrid retrieval (BM25 + dense → RRF → rerank) from the terminal.

Prints each stage's outcome, the dense candidates that clear the similarity threshold (RET-2) by rank,
then the final sources with their rank in every stage; identical content held by several sources is one
hit that says where else it is ("also in: …"). Runs no flow, so it never imports Prefect.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from forum_atlas.cli.output import add_source_filters, table
from forum_atlas.config import EMBEDDER_NAMES
from forum_atlas.ingestion.documents.model import format_pages

DENSE_SHOWN = 5   # dense candidates listed by rank with their cosine similarity


def register(groups: argparse._SubParsersAction) -> None:
    p = groups.add_parser("search", help="hybrid retrieval: final sources with their per-stage ranks")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5, help="final sources (default 5)")
    add_source_filters(p)
    p.add_argument("--rrf-k", type=int, default=50, help="Reciprocal Rank Fusion constant (default 50)")
    p.add_argument("--reranker", choices=["none", "flashrank", "cohere"], help="default: ATLAS_RERANKER or none")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES, help="default: ATLAS_EMBEDDER or onnx-minilm")
    p.add_argument("--json", action="store_true", help="print the full retrieval trace as JSON")
    p.set_defaults(handler=_search)


def run_search(query: str, *, top_k: int = 5, rrf_k: int = 50, sectors: list[str] | None = None,
               since: datetime | None = None, until: datetime | None = None,
               reranker: str | None = None, embedder: str | None = None):
    """Hybrid retrieval with the environment's settings; returns the full RetrievalResult."""
    from forum_atlas.config import settings_from_env
    from forum_atlas.retrieval.model import RetrievalOptions
    from forum_atlas.retrieval.pipeline import retrieve
    from forum_atlas.retrieval.retriever import Retriever
    from forum_atlas.store.db import shared_database
    from forum_atlas.store.retrieval import StoredCorpus

    settings = settings_from_env().with_overrides(embedder=embedder, reranker=reranker)
    options = RetrievalOptions(top_k=top_k, rrf_k=rrf_k, sectors=tuple(sectors) if sectors else None,
                               published_after=since, published_before=until)
    return retrieve(Retriever.from_settings(settings, StoredCorpus(shared_database(settings))), query, options)


def print_result(result) -> None:
    """Each stage's engine and outcome, then the final sources with their rank in every stage."""
    for stage in result.stages:
        status = stage.outcome.kind if stage.outcome else "ok"
        line = f"{stage.stage:<7} {stage.engine} ({stage.version}): {len(stage.candidates)} candidates, {status}"
        print(line + (f" — {stage.note}" if stage.note else ""))
    dense = next((s for s in result.stages if s.stage == "dense" and s.candidates), None)
    if dense is not None:
        top = ", ".join(f"#{c.rank} chunk {c.chunk_id} ({c.score:.3f})" for c in dense.candidates[:DENSE_SHOWN])
        print(f"dense candidates at cosine >= {dense.parameters['threshold']}: {len(dense.candidates)}; "
              f"by rank: {top}{', …' if len(dense.candidates) > DENSE_SHOWN else ''}")
    if not result.sources:
        print(f"\nno sources: {result.explanation}")
        return
    rows = []
    for position, source in enumerate(result.sources, start=1):
        r = source.ranks
        rows.append((position, source.chunk.chunk_id, r["bm25"] or "-", r["dense"] or "-", r["fusion"] or "-",
                     r["rerank"] or "-", (source.chunk.title or source.chunk.body)[:60],
                     format_pages(source.chunk.first_page, source.chunk.last_page) or "-", source.chunk.source_name[:30]))
    print()
    print(table(["#", "chunk", "bm25", "dense", "fused", "rerank", "title", "pages", "source"], rows))
    for position, source in enumerate(result.sources, start=1):
        cut = " […]" if source.truncated else ""
        pages = format_pages(source.chunk.first_page, source.chunk.last_page)
        print(f"\n[{position}] {source.chunk.title or '(untitled)'}{' · ' + pages if pages else ''} — {source.chunk.source_name}")
        print(f"    {source.context[:300]}{'…' if len(source.context) > 300 else ''}{cut}")
        if source.chunk.also_in:
            print(f"    also in: {'; '.join(copy.describe() for copy in source.chunk.also_in)}")


def _search(args: argparse.Namespace) -> int:
    result = run_search(args.query, top_k=args.top_k, rrf_k=args.rrf_k, sectors=args.sectors, since=args.since,
                        until=args.until, reranker=args.reranker, embedder=args.embedder)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        print_result(result)
    return 0
