-- Issue 24 (5): scoring versions are data plus a registered function. The function lives in
-- atlas/scoring/versions.py; its data lives here, one row per version (a test keeps the two equal). Every score
-- row is checked against its version's row, and the state view reads the default version from this table
-- instead of naming one.
--
-- brier-v1  Brier on the newest vintage by the scoring instant: every score stored before this migration.
-- log-v1    the logarithmic score in nats, p clipped to [0.001, 0.999] first (column `clip`), stored in
--           the new column log_score (a log score is not a Brier score and may exceed 1).
-- brier-v2  Brier on the vintage current at scoring time (vintage_id), beside the vintage current at the
--           deadline (deadline_vintage_id: the newest full one fetched by then, NULL if none was) and the
--           outcome that vintage gave (deadline_outcome: NULL where it lacked a date), so revisions show.
CREATE TABLE forum.scoring_versions (
  version                  text PRIMARY KEY CHECK (version ~ '^[a-z]+-v[0-9]+$'),
  measure                  text NOT NULL CHECK (measure IN ('brier', 'log')),
  clip                     double precision CHECK (clip > 0 AND clip < 0.5),
  records_deadline_vintage boolean NOT NULL,
  description              text NOT NULL CHECK (length(btrim(description)) > 0),
  is_default               boolean NOT NULL DEFAULT false,
  registered_at            timestamptz NOT NULL DEFAULT now(),
  CHECK ((measure = 'log') = (clip IS NOT NULL))
);

INSERT INTO forum.scoring_versions (version, measure, clip, records_deadline_vintage, description, is_default) VALUES
  ('brier-v1', 'brier', NULL, false,
   'Brier score (p - o)^2 on the newest vintage fetched by the scoring instant', true),
  ('log-v1', 'log', 0.001, false,
   'logarithmic score -ln(p) if YES, -ln(1 - p) if NO (nats), p clipped to [0.001, 0.999]; newest vintage '
   'fetched by the scoring instant', false),
  ('brier-v2', 'brier', NULL, true,
   'Brier score on the vintage current at scoring time, beside the vintage current at the deadline and its '
   'outcome (revisions visible)', false);

-- A version's rule never changes once scores cite it (a change is a new version); only which one is the
-- default may move, and exactly one is.
CREATE FUNCTION forum.check_scoring_version_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (OLD.version, OLD.measure, OLD.clip, OLD.records_deadline_vintage, OLD.description, OLD.registered_at)
     IS DISTINCT FROM
     (NEW.version, NEW.measure, NEW.clip, NEW.records_deadline_vintage, NEW.description, NEW.registered_at) THEN
    RAISE EXCEPTION 'scoring version % keeps its rule: only is_default may change (a new rule is a new version)',
      OLD.version USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER scoring_versions_rule_immutable BEFORE UPDATE ON forum.scoring_versions
  FOR EACH ROW EXECUTE FUNCTION forum.check_scoring_version_change();
CREATE TRIGGER scoring_versions_no_delete BEFORE DELETE ON forum.scoring_versions
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER scoring_versions_no_truncate BEFORE TRUNCATE ON forum.scoring_versions
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

CREATE FUNCTION forum.check_one_default_scoring_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  SELECT count(*) INTO n FROM forum.scoring_versions WHERE is_default;
  IF n <> 1 THEN
    RAISE EXCEPTION 'exactly one scoring version is the default, not %', n USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER scoring_versions_one_default AFTER INSERT OR UPDATE ON forum.scoring_versions
  FOR EACH STATEMENT EXECUTE FUNCTION forum.check_one_default_scoring_version();

-- ------------------------------------------------------------------ the score rows of the new versions
-- Existing rows are all brier-v1: the new columns are NULL for them, and the rewritten resolved-row check is
-- the old one for them (a resolved row has its outcome and exactly one score, in its measure's column).
ALTER TABLE forum.forecast_scores
  ADD COLUMN log_score double precision CHECK (log_score >= 0 AND log_score < 'Infinity'),
  ADD COLUMN deadline_vintage_id bigint,
  ADD COLUMN deadline_outcome smallint CHECK (deadline_outcome IN (0, 1)),
  DROP CONSTRAINT forecast_scores_check,
  ADD CONSTRAINT forecast_scores_resolved_has_outcome_and_one_score
    CHECK ((status = 'resolved') = (outcome IS NOT NULL AND num_nonnulls(brier, log_score) = 1)),
  ADD CONSTRAINT forecast_scores_deadline_outcome_has_vintage
    CHECK (deadline_outcome IS NULL OR deadline_vintage_id IS NOT NULL);

-- The current score per forecast and version, now with the new columns (appended: a view keeps its columns'
-- order). Ties on the vintage (none before brier-v2) go to the later row.
CREATE OR REPLACE VIEW forum.current_scores AS
SELECT DISTINCT ON (s.forecast_id, s.scoring_version)
       s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome, s.probability, s.brier,
       s.target_date, s.target_present, s.target_value, s.reference_date, s.reference_present, s.reference_value,
       s.reason, s.scored_at, s.flow_run_id, v.label AS vintage_label, v.fetched_at AS vintage_fetched_at,
       s.log_score, s.deadline_vintage_id, s.deadline_outcome
  FROM forum.forecast_scores s JOIN forum.series_vintages v USING (vintage_id)
 ORDER BY s.forecast_id, s.scoring_version, v.fetched_at DESC, s.vintage_id DESC, s.score_id DESC;

-- The states under the default version, whichever it is: no version name is written here.
CREATE OR REPLACE VIEW forum.forecast_states_current AS
SELECT * FROM forum.forecast_states((SELECT version FROM forum.scoring_versions WHERE is_default));

-- Each INSERT statement's score rows against their binding, vintage and version (021's check, extended): the
-- version is registered, a resolved row's score is in its measure's column, and a deadline vintage is recorded
-- only by a version that records one, of the binding's series, full, and fetched by the deadline.
CREATE OR REPLACE FUNCTION forum.check_score_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bad record;
BEGIN
  SELECT n.forecast_id, n.vintage_id, n.scoring_version, n.deadline_vintage_id,
         b.forecast_id IS NULL AS unbound, v.vintage_id IS NULL AS no_vintage, b.series_id, v.series_id AS v_series,
         r.version IS NULL AS unknown_version, r.measure,
         n.status = 'resolved' AND (CASE r.measure WHEN 'log' THEN n.log_score ELSE n.brier END) IS NULL
           AS wrong_column,
         NOT coalesce(r.records_deadline_vintage, false)
           AND (n.deadline_vintage_id IS NOT NULL OR n.deadline_outcome IS NOT NULL) AS deadline_not_recorded_here,
         n.deadline_vintage_id IS NOT NULL
           AND (d.vintage_id IS NULL OR d.series_id <> b.series_id OR d.partial OR d.fetched_at > b.deadline)
           AS bad_deadline_vintage
    INTO bad
    FROM new_scores n
    LEFT JOIN forum.forecast_bindings b ON b.forecast_id = n.forecast_id
    LEFT JOIN forum.series_vintages v ON v.vintage_id = n.vintage_id
    LEFT JOIN forum.scoring_versions r ON r.version = n.scoring_version
    LEFT JOIN forum.series_vintages d ON d.vintage_id = n.deadline_vintage_id
   WHERE b.forecast_id IS NULL OR v.vintage_id IS NULL OR b.series_id <> v.series_id OR r.version IS NULL
      OR (n.status = 'resolved' AND (CASE r.measure WHEN 'log' THEN n.log_score ELSE n.brier END) IS NULL)
      OR (NOT r.records_deadline_vintage AND (n.deadline_vintage_id IS NOT NULL OR n.deadline_outcome IS NOT NULL))
      OR (n.deadline_vintage_id IS NOT NULL
          AND (d.vintage_id IS NULL OR d.series_id <> b.series_id OR d.partial OR d.fetched_at > b.deadline))
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'score for forecast % on vintage % (%): %', bad.forecast_id, bad.vintage_id, bad.scoring_version,
      CASE WHEN bad.unbound THEN 'the forecast is not bound (only bound forecasts are scored)'
           WHEN bad.no_vintage THEN 'no such vintage'
           WHEN bad.v_series <> bad.series_id THEN format('the vintage is of %s, the binding of %s', bad.v_series,
                                                          bad.series_id)
           WHEN bad.unknown_version THEN 'no such scoring version (forum.scoring_versions)'
           WHEN bad.wrong_column THEN format('a resolved %s score belongs in its %s column', bad.measure,
                                             CASE bad.measure WHEN 'log' THEN 'log_score' ELSE 'brier' END)
           WHEN bad.deadline_not_recorded_here THEN 'this version records no deadline vintage'
           ELSE format('deadline vintage %s is not a full vintage of %s fetched by the deadline',
                       bad.deadline_vintage_id, bad.series_id) END
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;

-- The digest of a score row covers the new columns too. A row that has none of them (every brier-v1 row,
-- all rows stored before) digests exactly as before (032), so every recorded digest stays valid.
CREATE OR REPLACE FUNCTION forum.content_digest(s forum.forecast_scores) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(CASE
    WHEN num_nonnulls(s.log_score, s.deadline_vintage_id, s.deadline_outcome) = 0 THEN
      ROW(s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome,
          forum.float_bits(s.probability), forum.float_bits(s.brier),
          forum.day_number(s.target_date), s.target_present, forum.float_bits(s.target_value),
          forum.day_number(s.reference_date), s.reference_present,
          forum.float_bits(s.reference_value), s.reason, forum.epoch_us(s.scored_at))::text
    ELSE
      ROW(s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome,
          forum.float_bits(s.probability), forum.float_bits(s.brier),
          forum.day_number(s.target_date), s.target_present, forum.float_bits(s.target_value),
          forum.day_number(s.reference_date), s.reference_present,
          forum.float_bits(s.reference_value), s.reason, forum.epoch_us(s.scored_at),
          forum.float_bits(s.log_score), s.deadline_vintage_id, s.deadline_outcome)::text END)
$$;
