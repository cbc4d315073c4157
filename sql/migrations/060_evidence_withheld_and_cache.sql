-- Evidence base, part 2 (issue 14).
--
-- 1. What a later brief needs to say why a source is absent: the text of every record a gather run
--    saw, so that a record the retraction gate excluded (or the licence guard kept as context only)
--    can be scored against a brief's retrieval query with the same analyzer and BM25 formula as the
--    searchable corpus (store/evidence.py `withheld_matches`). Rows written before this migration
--    have an empty body and are matched on their title only.
-- 2. The provider cache: one answer (typed outcome + items) per source, de-identified query and
--    source version, so a repeated question is not sent again within the cache's TTL (the TTL is
--    the reader's: GatherParameters.cache_ttl_hours, default 24). Only ok / empty answers are kept.

ALTER TABLE forum.evidence_records
  ADD COLUMN body text NOT NULL DEFAULT '',
  ADD COLUMN lexemes tsvector GENERATED ALWAYS AS (forum.analyze(title, body)) STORED;
-- The newest run's word on a record.
CREATE INDEX evidence_records_latest ON forum.evidence_records (record_key, run_id DESC);

CREATE TABLE forum.evidence_cache (
  source         text NOT NULL,
  query_digest   text NOT NULL CHECK (query_digest ~ '^[0-9a-f]{64}$'),  -- sha256 of the de-identified step
  source_version text NOT NULL,                                         -- endpoint and connector version
  query          text NOT NULL,                                         -- de-identified; never the raw text
  outcome        jsonb NOT NULL CHECK (outcome ->> 'kind' IN ('ok', 'empty')),
  items          jsonb NOT NULL CHECK (jsonb_typeof(items) = 'array'),
  stored_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, query_digest, source_version)
);
