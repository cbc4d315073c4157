"""Names an operator finds things by in the Prefect UI: run names and artifact keys that say what a run was
about (`brief-42-vitamin-d-supplementation-fracture-risk`, `ingest-scifact`), and the `brief-index` page.

Prefect's artifact keys allow lowercase letters, digits and dashes only; its UI searches runs by name and
artifacts by key, so the words of a question must be in both.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import PurePath
from typing import Any

# words that say nothing about what a question is about
_FILLER = frozenset("""a an and are as at be by can could did do does for from has have how if in into is it its of
on or should than that the their there these this to was were what when where whether which while who why will
with would""".split())
SLUG_WORDS = 6
SLUG_WIDTH = 48


def slug(text: str, *, words: int = SLUG_WORDS, width: int = SLUG_WIDTH) -> str:
    """The first `words` meaningful words of `text`, ASCII, lowercase, dash-joined, at most `width` characters
    (whole words); "untitled" when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    kept = [w for w in re.findall(r"[a-z0-9]+", ascii_text) if w not in _FILLER][:words]
    out = ""
    for word in kept:
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > width:
            break
        out = candidate
    return out or (kept[0][:width] if kept else "untitled")


def brief_key(brief_id: int, question: str) -> str:
    """A brief's artifact key and its run's name: `brief-<id>-<slug of the question>`."""
    return f"brief-{int(brief_id)}-{slug(question)}"


def ingest_run_name(path: str, source_name: str | None) -> str:
    """An ingest run's name: `ingest-<source>` (a folder's source as given), else `ingest-<file or folder name>`
    (JSONL rows name their own sources)."""
    return f"ingest-{slug(source_name or PurePath(path).name, words=8)}"


def brief_index_markdown(briefs: Iterable[Mapping[str, Any]], ui_url: str | None) -> str:
    """The `brief-index` artifact: the newest briefs, each with its key and links to its artifact and run in the
    UI (`ui_url`; plain keys without one). `briefs`: rows of brief_id, created_at, question, flow_run_id."""
    lines = ["# Recent briefs", "", "| brief | created (UTC) | question | run |", "|---|---|---|---|"]
    for row in briefs:
        key = brief_key(row["brief_id"], row["question"])
        created: datetime = row["created_at"]
        question = _cell(row["question"], 120)
        run_id = row.get("flow_run_id")
        if ui_url:
            brief = f"[{key}]({ui_url}/artifacts/key/{key})"
            run = f"[run]({ui_url}/runs/flow-run/{run_id})" if run_id else "-"
        else:
            brief, run = key, str(run_id or "-")
        lines.append(f"| {brief} | {created:%Y-%m-%d %H:%M} | {question} | {run} |")
    return "\n".join(lines) + "\n"


def _cell(text: str, width: int) -> str:
    """Text for one markdown table cell: one line, no column breaks, cut to `width`."""
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= width else flat[: width - 1] + "…"
