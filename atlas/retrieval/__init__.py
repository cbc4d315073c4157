"""Retrieval logic (RET-1…6): options and traced results, query checks, fusion, rerank fallback,
context budget. The database stages live in `forum_atlas.store.retrieval`."""
