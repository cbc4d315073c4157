"""Ingestion as plain logic, in the order a batch meets it.

`records` reads an input (JSONL, the BEIR corpus format, or a folder of documents read by
`documents`) as a stream of raw rows; `validation` checks a batch with great-expectations before
anything is written; `chunking` cuts a text into sentence-aware chunks with exact offsets; and
`preparation` turns validated records into the document versions, chunks and embeddings that
`store.documents` writes in one transaction.
"""
