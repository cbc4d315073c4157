"""Retrieval logic (RET-1…6): options and traced results, query checks, fusion, rerank fallback,
context budget, query embedding and the pipeline's `Retriever`. The SQL searches live in
`forum_atlas.store.retrieval`."""
