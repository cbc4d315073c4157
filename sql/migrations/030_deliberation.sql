-- Briefs (AUD-1..4, DEL-3): sealed evidence snapshots, briefs with their sections and audited
-- claims, append-only citations whose source importance, quality and recency are snapshotted at
-- citation time, and every provider call. The database guards the invariants: a citation's quote
-- must occur verbatim in its chunk, a verified SOURCED claim must carry a citation, a snapshot's
-- seal must be the sha256 of its canonical text, and no row here is ever updated or deleted.

-- Whitespace normalisation, the same as Python's `" ".join(s.split())`: every run of the
-- characters str.split() splits on becomes one space, both ends trimmed. The set (tests compare
-- it with Python over every code point): U+0009-U+000D, U+001C-U+0020, U+0085, U+00A0, U+1680,
-- U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (regex escapes in an E'' literal, so the
-- pattern is the same whatever standard_conforming_strings says).
CREATE FUNCTION forum.normalize_whitespace(p_text text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT btrim(regexp_replace(p_text,
    E'[\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+', ' ', 'g'),
    ' ')
$$;

-- DEL-3's deterministic verbatim check: true iff the quote, whitespace-normalised, occurs in the
-- chunk's body, whitespace-normalised. Case and punctuation are kept. An empty or
-- whitespace-only quote, a NULL or an unknown chunk is false (never NULL).
CREATE FUNCTION forum.citation_verbatim_matches(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT q.needle <> '' AND strpos(forum.normalize_whitespace(c.body), q.needle) > 0
       FROM forum.chunks c, (SELECT forum.normalize_whitespace(p_quote) AS needle) q
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;

-- AUD-2's recency buckets, by the age of a document at a moment: just_now (< 60 min), hours
-- (< 24 h), days (< 7 days), weeks (< 30 days), months (< 365 days), older; undated when there is
-- no publication date or it lies after the moment.
CREATE FUNCTION forum.recency_label(published_at timestamptz, at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN published_at IS NULL OR at IS NULL OR published_at > at THEN 'undated'
    WHEN at - published_at < interval '60 minutes' THEN 'just_now'
    WHEN at - published_at < interval '24 hours' THEN 'hours'
    WHEN at - published_at < interval '7 days' THEN 'days'
    WHEN at - published_at < interval '30 days' THEN 'weeks'
    WHEN at - published_at < interval '365 days' THEN 'months'
    ELSE 'older' END
$$;

-- The evidence behind one answer (AUD-3), as one canonical JSON text (atlas.deliberation.snapshot)
-- sealed by its sha256; part_digests name the sha256 of each top-level part. Kept as text, not
-- jsonb: jsonb would re-format numbers and reorder keys, and the seal is over the exact text.
CREATE TABLE forum.evidence_snapshots (
  snapshot_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  canonical    text NOT NULL,
  seal         text NOT NULL CHECK (seal ~ '^[0-9a-f]{64}$'),
  part_digests jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(part_digests) = 'object'),
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT evidence_snapshots_sealed CHECK (seal = encode(sha256(convert_to(canonical, 'UTF8')), 'hex'))
);

CREATE TABLE forum.briefs (
  brief_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  question    text NOT NULL CHECK (length(btrim(question)) > 0),   -- de-identified; the raw one is never stored
  created_at  timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  snapshot_id bigint NOT NULL UNIQUE REFERENCES forum.evidence_snapshots,
  audit       jsonb NOT NULL,                                       -- AuditSummary (DEL-7)
  engines     jsonb NOT NULL DEFAULT '{}',
  extractive  boolean NOT NULL,
  redactions  integer NOT NULL DEFAULT 0 CHECK (redactions >= 0),
  flow_run_id text,
  plan        jsonb NOT NULL
);
CREATE INDEX briefs_created ON forum.briefs (created_at DESC, brief_id DESC);

-- One row per persona section, in order, then the coordinator's synthesis (kind 'synthesis').
CREATE TABLE forum.brief_sections (
  brief_id     bigint NOT NULL REFERENCES forum.briefs,
  ordinal      integer NOT NULL CHECK (ordinal >= 0),
  kind         text NOT NULL CHECK (kind IN ('persona', 'synthesis')),
  role         text NOT NULL CHECK (length(role) > 0),
  topic        text NOT NULL,
  insufficient text,                  -- why it renders "insufficient evidence on <topic>" (DEL-5)
  attempts     integer NOT NULL DEFAULT 1 CHECK (attempts >= 1),
  engine       text NOT NULL DEFAULT '',
  PRIMARY KEY (brief_id, ordinal)
);
CREATE UNIQUE INDEX brief_sections_one_synthesis ON forum.brief_sections (brief_id) WHERE kind = 'synthesis';

CREATE TABLE forum.brief_claims (
  claim_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  brief_id        bigint NOT NULL,
  section_ordinal integer NOT NULL,
  ordinal         integer NOT NULL CHECK (ordinal >= 0),
  text            text NOT NULL,
  claimed_tag     text NOT NULL CHECK (claimed_tag IN ('SOURCED', 'INFERRED')),
  tag             text NOT NULL CHECK (tag IN ('SOURCED', 'INFERRED')),
  chunk_id        bigint REFERENCES forum.chunks,
  source_label    text,
  quote           text,
  verdict         text CHECK (verdict IN ('supports', 'contradicts', 'contextual', 'abstain')),
  failed          text CHECK (failed IN ('no_quote', 'unknown_source', 'not_retrieved', 'quote_not_verbatim',
                                         'contradicts', 'contextual')),
  detail          text NOT NULL DEFAULT '',
  FOREIGN KEY (brief_id, section_ordinal) REFERENCES forum.brief_sections (brief_id, ordinal),
  UNIQUE (brief_id, section_ordinal, ordinal),
  -- a SOURCED tag needs a passage and a quote; the audit can only take a tag away, never add one
  CONSTRAINT brief_claims_sourced_cites CHECK (tag <> 'SOURCED' OR (chunk_id IS NOT NULL AND quote IS NOT NULL
                                                                     AND length(btrim(quote)) > 0)),
  CONSTRAINT brief_claims_no_upgrade CHECK (NOT (claimed_tag = 'INFERRED' AND tag = 'SOURCED')),
  -- a downgrade records the failed check; a verified claim has none
  CONSTRAINT brief_claims_failed_iff_downgraded CHECK ((claimed_tag = 'SOURCED' AND tag = 'INFERRED') = (failed IS NOT NULL))
);
CREATE INDEX brief_claims_brief ON forum.brief_claims (brief_id);

-- AUD-1/AUD-2: one citation per verified SOURCED claim. The insert trigger below fills the
-- brief, the document version, the source and its importance/quality, the publication date and
-- the recency label from the database, whatever the client sent, and refuses a quote that does
-- not occur verbatim in the chunk.
CREATE TABLE forum.citations (
  citation_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  brief_id         bigint NOT NULL REFERENCES forum.briefs,
  claim_id         bigint NOT NULL UNIQUE REFERENCES forum.brief_claims,
  chunk_id         bigint NOT NULL REFERENCES forum.chunks,
  document_id      bigint NOT NULL REFERENCES forum.documents,
  document_version integer NOT NULL,
  source_id        bigint NOT NULL REFERENCES forum.sources,
  quote            text NOT NULL,
  importance       smallint NOT NULL CHECK (importance BETWEEN 1 AND 5),
  quality_score    smallint NOT NULL CHECK (quality_score BETWEEN 1 AND 5),
  recency_label    text NOT NULL CHECK (recency_label IN ('just_now', 'hours', 'days', 'weeks', 'months', 'older', 'undated')),
  published_at     timestamptz,
  cited_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX citations_brief ON forum.citations (brief_id);
CREATE INDEX citations_chunk ON forum.citations (chunk_id);

CREATE FUNCTION forum.snapshot_citation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  claim forum.brief_claims;
  src record;
BEGIN
  SELECT * INTO claim FROM forum.brief_claims WHERE claim_id = NEW.claim_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'citation of claim %: no such claim', NEW.claim_id USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF claim.tag <> 'SOURCED' THEN
    RAISE EXCEPTION 'citation of claim %: only a verified SOURCED claim is cited (it is %)', NEW.claim_id, claim.tag
      USING ERRCODE = 'check_violation';
  END IF;
  NEW.chunk_id := coalesce(NEW.chunk_id, claim.chunk_id);
  NEW.quote := coalesce(NEW.quote, claim.quote);
  IF NEW.chunk_id IS DISTINCT FROM claim.chunk_id OR NEW.quote IS DISTINCT FROM claim.quote THEN
    RAISE EXCEPTION 'citation of claim %: chunk and quote must be the claim''s own', NEW.claim_id
      USING ERRCODE = 'check_violation';
  END IF;
  SELECT d.document_id, d.version, d.source_id, d.published_at, s.importance, s.quality_score INTO src
    FROM forum.chunks c JOIN forum.documents d USING (document_id) JOIN forum.sources s USING (source_id)
   WHERE c.chunk_id = NEW.chunk_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'citation of claim %: no such chunk %', NEW.claim_id, NEW.chunk_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF NOT forum.citation_verbatim_matches(NEW.chunk_id, NEW.quote) THEN
    RAISE EXCEPTION 'citation of claim %: the quote does not occur verbatim in chunk % (whitespace aside)',
      NEW.claim_id, NEW.chunk_id USING ERRCODE = 'check_violation';
  END IF;
  NEW.brief_id := claim.brief_id;
  NEW.document_id := src.document_id;
  NEW.document_version := src.version;
  NEW.source_id := src.source_id;
  NEW.importance := src.importance;
  NEW.quality_score := src.quality_score;
  NEW.published_at := src.published_at;
  NEW.cited_at := now();
  NEW.recency_label := forum.recency_label(src.published_at, NEW.cited_at);
  RETURN NEW;
END $$;
CREATE TRIGGER citations_snapshot BEFORE INSERT ON forum.citations
  FOR EACH ROW EXECUTE FUNCTION forum.snapshot_citation();

-- A verified SOURCED claim without its citation is refused at commit.
CREATE FUNCTION forum.check_claim_cited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tag = 'SOURCED' AND NOT EXISTS (SELECT 1 FROM forum.citations WHERE claim_id = NEW.claim_id) THEN
    RAISE EXCEPTION 'claim % of brief % is SOURCED but has no citation', NEW.claim_id, NEW.brief_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER brief_claims_cited AFTER INSERT ON forum.brief_claims
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.tag = 'SOURCED') EXECUTE FUNCTION forum.check_claim_cited();

-- AUD-4: every provider or model call behind a brief.
CREATE TABLE forum.provider_calls (
  call_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  brief_id     bigint NOT NULL REFERENCES forum.briefs,
  ordinal      integer NOT NULL CHECK (ordinal >= 0),
  stage        text NOT NULL,
  provider     text NOT NULL,
  version      text NOT NULL,
  input_digest text NOT NULL,
  outcome      text NOT NULL CHECK (outcome IN ('ok', 'timeout', 'rate_limited', 'auth', 'unavailable', 'bad_response',
                                                'degraded')),
  latency_ms   double precision NOT NULL CHECK (latency_ms >= 0 AND latency_ms < 'Infinity'),
  attempts     integer NOT NULL CHECK (attempts >= 1),
  detail       text NOT NULL DEFAULT '',
  prompt_hash  text,
  flow_run_id  text,
  task_run_id  text,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (brief_id, ordinal)
);

-- verify_brief finds a brief's events (BRIEF_PERSISTED, SOURCED_TAGS_DOWNGRADED) by the brief id
-- in their payload.
CREATE INDEX events_brief ON forum.events ((payload->>'brief_id'))
  WHERE kind IN ('BRIEF_PERSISTED', 'SOURCED_TAGS_DOWNGRADED');

-- AUD-1: append-only, for every role. The triggers hold even for a role that was granted
-- UPDATE/DELETE/TRUNCATE (and for the superuser, short of disabling them); PUBLIC gets nothing.
CREATE TRIGGER evidence_snapshots_append_only BEFORE UPDATE OR DELETE ON forum.evidence_snapshots
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER evidence_snapshots_no_truncate BEFORE TRUNCATE ON forum.evidence_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER briefs_append_only BEFORE UPDATE OR DELETE ON forum.briefs
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER briefs_no_truncate BEFORE TRUNCATE ON forum.briefs
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER brief_sections_append_only BEFORE UPDATE OR DELETE ON forum.brief_sections
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER brief_sections_no_truncate BEFORE TRUNCATE ON forum.brief_sections
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER brief_claims_append_only BEFORE UPDATE OR DELETE ON forum.brief_claims
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER brief_claims_no_truncate BEFORE TRUNCATE ON forum.brief_claims
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER citations_append_only BEFORE UPDATE OR DELETE ON forum.citations
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER citations_no_truncate BEFORE TRUNCATE ON forum.citations
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER provider_calls_append_only BEFORE UPDATE OR DELETE ON forum.provider_calls
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER provider_calls_no_truncate BEFORE TRUNCATE ON forum.provider_calls
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

REVOKE UPDATE, DELETE, TRUNCATE ON forum.evidence_snapshots, forum.briefs, forum.brief_sections, forum.brief_claims,
  forum.citations, forum.provider_calls FROM PUBLIC;
