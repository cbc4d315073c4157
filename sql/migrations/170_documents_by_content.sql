-- Issue 36: identical content from two sources (the same paper ingested as the demo's copy and as the
-- user's) is one search hit that names every copy. Retrieval looks up, for each candidate passage, the
-- other searchable documents with its document's content hash (title and text): this index serves that
-- lookup (documents are unique per source and external id, not per content).
CREATE INDEX documents_content_hash ON forum.documents (content_hash)
  WHERE is_current AND NOT retracted AND NOT withdrawn AND NOT superseded;
