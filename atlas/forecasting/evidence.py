"""Driver evidence (FC-1): each driver hypothesis is used as a query for hybrid retrieval and the
passages returned are cited on the driver. Retrieval is injected as a plain callable so this package
stays free of the database; see tasks/forecasting.py for the one used in flows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from forum_atlas.forecasting.montecarlo import Driver

# query, limit -> passages: dicts with at least chunk_id and a verbatim quote of the passage.
EvidenceSearch = Callable[[str, int], Sequence[dict[str, Any]]]
QUOTE_CHARS = 400


def citation(passage: dict[str, Any]) -> dict[str, Any]:
    text = str(passage.get("quote") or passage.get("body") or passage.get("text") or "")
    keep = ("chunk_id", "document_id", "document_version", "source", "title", "url", "score", "rank",
            "start_char", "end_char")
    cited = {k: passage[k] for k in keep if k in passage and passage[k] is not None}
    cited["quote"] = text[:QUOTE_CHARS]
    return cited


def attach_evidence(drivers: Sequence[Driver], search: EvidenceSearch, *, per_driver: int = 3) -> list[Driver]:
    """Drivers with their cited passages; a driver with no passages says so (empty tuple)."""
    return [replace(d, evidence=tuple(citation(p) for p in search(d.hypothesis, per_driver))) for d in drivers]
