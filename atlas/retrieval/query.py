"""Checking a retrieval request before it reaches the database.

Bad input gets a `QueryError` whose message says what to change, or an explained empty result
(a recency window that lies entirely in the future can match nothing). Query text is only ever
passed to the database as a parameter, so quotes and SQL metacharacters are ordinary characters.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from forum_atlas.retrieval.model import RetrievalOptions

MAX_QUERY_CHARS = 4000


class QueryError(ValueError):
    """A retrieval request that cannot be run as given; the message names the fix."""


def clean_query(text: object) -> str:
    if not isinstance(text, str):
        raise QueryError(f"the query must be text, not {type(text).__name__}")
    if "\x00" in text:
        raise QueryError("the query contains a NUL character; remove it")
    stripped = " ".join(text.split())
    if not stripped:
        raise QueryError("the query is empty: give the words to search for")
    if len(stripped) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the query is {len(stripped):,} characters long; the limit is {MAX_QUERY_CHARS:,} "
            "(search with the question or claim, not a whole document)")
    return stripped


def _aware(moment: datetime | None, name: str) -> datetime | None:
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        raise QueryError(f"{name} must be a date-time, not {type(moment).__name__}")
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def check_options(options: RetrievalOptions, known_sectors: Iterable[str], *,
                  now: datetime | None = None) -> tuple[RetrievalOptions, str]:
    """(normalised options, reason the request can match nothing — or "").

    Raises QueryError for parameters out of range and for sectors the corpus does not have.
    """
    for name in ("bm25_k", "dense_k", "top_k", "rerank_candidates", "max_context_chars", "ef_search"):
        value = getattr(options, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise QueryError(f"{name} must be a positive integer, got {value!r}")
    if options.bm25_k > 1000 or options.dense_k > 1000:
        raise QueryError("bm25_k and dense_k are limited to 1,000 candidates")
    if not 0 <= options.rrf_k <= 10_000:
        raise QueryError(f"rrf_k must be between 0 and 10,000, got {options.rrf_k}")
    if not -1.0 <= options.dense_threshold <= 1.0:
        raise QueryError(f"dense_threshold is a cosine similarity in [-1, 1], got {options.dense_threshold}")
    sectors = options.sectors
    if sectors is not None:
        if isinstance(sectors, str):
            sectors = (sectors,)
        sectors = tuple(dict.fromkeys(s.strip() for s in sectors))
        if not sectors or any(not s for s in sectors):
            raise QueryError("a sector filter needs at least one non-empty sector name")
        known = sorted(set(known_sectors))
        unknown = [s for s in sectors if s not in known]
        if unknown:
            raise QueryError(f"unknown sector(s) {', '.join(map(repr, unknown))}; the corpus has: "
                             f"{', '.join(known) if known else '(no documents yet)'}")
    after = _aware(options.published_after, "published_after")
    before = _aware(options.published_before, "published_before")
    if after is not None and before is not None and after >= before:
        raise QueryError(f"the recency window is empty: published_after {after.isoformat()} is not "
                         f"before published_before {before.isoformat()}")
    checked = options.with_changes(sectors=sectors, published_after=after, published_before=before)
    now = now or datetime.now(timezone.utc)
    if after is not None and after > now:
        return checked, (f"the recency window starts in the future ({after.isoformat()}); no document can "
                         "have been published in it")
    return checked, ""
