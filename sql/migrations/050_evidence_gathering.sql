-- Evidence gathering (issue 14, EVB-1…4): one row per router run — the de-identified question,
-- the query plan, what de-identification removed (counts by kind, never values), each source's
-- typed outcome and the source versions — and one row per record the run saw, with what became
-- of it: ingested (may support a claim), context only (licence guard) or excluded (retraction
-- gate), always with the reason. A later brief asks `forum.evidence_records` why a record it
-- would cite was excluded.

CREATE TABLE forum.evidence_runs (
  run_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  question        text NOT NULL CHECK (length(btrim(question)) > 0),   -- de-identified; the raw one is never stored
  plan            jsonb NOT NULL,
  redactions      jsonb NOT NULL DEFAULT '{}',
  outcomes        jsonb NOT NULL CHECK (jsonb_typeof(outcomes) = 'array'),
  source_versions jsonb NOT NULL DEFAULT '{}',
  flow_run_id     text,
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE forum.evidence_records (
  run_id      bigint NOT NULL REFERENCES forum.evidence_runs ON DELETE CASCADE,
  record_key  text NOT NULL,                      -- doi:… | pmid:… | <source>:<id>: the ingested external_id
  source      text NOT NULL,
  external_id text NOT NULL,
  title       text NOT NULL,
  doi         text,
  pmid        text,
  status      text NOT NULL CHECK (status IN ('ingested', 'context_only', 'excluded')),
  reason      text NOT NULL CHECK (length(btrim(reason)) > 0),
  score       double precision,
  PRIMARY KEY (run_id, record_key)
);
CREATE INDEX evidence_records_excluded ON forum.evidence_records (record_key, run_id DESC) WHERE status = 'excluded';
