-- Forecasts (FC-1..8): public series and their vintages, published forecasts, bindings made at
-- issue by the scheduled lane, and append-only versioned Brier scores. States are a view, so
-- counts are always live.

-- Named public series (FRED ids). The catalogue of known ids lives in atlas/series/registry.py.
CREATE TABLE forum.series (
  series_id  text PRIMARY KEY CHECK (series_id ~ '^[A-Z0-9_]+$'),
  title      text NOT NULL,
  frequency  text NOT NULL CHECK (frequency IN ('daily', 'weekly', 'monthly', 'quarterly', 'annual')),
  units      text NOT NULL DEFAULT '',
  publisher  text NOT NULL,
  citation   text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- One fetched set of observations. Identical content is one vintage (UNIQUE content hash), so
-- loading the same download twice adds nothing.
CREATE TABLE forum.series_vintages (
  vintage_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  series_id    text NOT NULL REFERENCES forum.series,
  label        text NOT NULL,                    -- e.g. '2025-04' (month of the download)
  fetched_at   timestamptz NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  connector    text NOT NULL,                    -- file | fred-csv | fred-api
  origin       text NOT NULL,                    -- path or URL it came from
  content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  row_count    integer NOT NULL CHECK (row_count > 0),
  first_date   date NOT NULL,
  last_date    date NOT NULL,
  UNIQUE (series_id, content_hash)
);
CREATE INDEX series_vintages_latest ON forum.series_vintages (series_id, fetched_at DESC, vintage_id DESC);

-- A missing value is stored as NULL: the row says "this period exists in the download and is
-- empty", which is different from a period the download does not reach.
CREATE TABLE forum.series_observations (
  vintage_id       bigint NOT NULL REFERENCES forum.series_vintages,
  observation_date date NOT NULL,
  value            double precision CHECK (value IS NULL OR value NOT IN ('NaN', 'Infinity', '-Infinity')),
  PRIMARY KEY (vintage_id, observation_date)
);

-- A published forecast. `requested_via` says who asked: only the lane's forecasts can be bound.
CREATE TABLE forum.forecasts (
  forecast_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  question          text NOT NULL CHECK (length(btrim(question)) > 0),
  requested_via     text NOT NULL CHECK (requested_via IN ('api', 'cli', 'lane', 'legacy')),
  issued_at         timestamptz NOT NULL,
  recorded_at       timestamptz NOT NULL DEFAULT now(),
  confidence_target double precision NOT NULL CHECK (confidence_target > 0 AND confidence_target < 1),
  n_samples         integer NOT NULL CHECK (n_samples IN (1000, 10000)),
  seed              bigint NOT NULL,
  base_rate         double precision NOT NULL CHECK (base_rate > 0 AND base_rate < 1),
  probability       double precision NOT NULL CHECK (probability >= 0 AND probability <= 1),
  ci_low            double precision NOT NULL CHECK (ci_low >= 0 AND ci_low <= probability),
  ci_high           double precision NOT NULL CHECK (ci_high <= 1 AND ci_high >= probability),
  ci_method         text NOT NULL CHECK (ci_method IN ('normal', 'wilson')),
  ci_basis          text NOT NULL CHECK (ci_basis = 'monte_carlo_sampling_95'),
  distribution      jsonb NOT NULL,               -- quantiles + histogram of the simulated probability
  drivers           jsonb NOT NULL,               -- hypotheses with effect, weight, evidence citations
  engine            jsonb NOT NULL,               -- driver engine, Monte-Carlo version, retrieval used
  flow_run_id       text
);
CREATE INDEX forecasts_issued ON forum.forecasts (issued_at);

-- The binding that makes a forecast scoreable (FC-4): series, comparator, a fixed threshold OR a
-- reference observation (month-over-month questions), the target observation and a deadline.
CREATE TABLE forum.forecast_bindings (
  forecast_id    bigint PRIMARY KEY REFERENCES forum.forecasts,
  question_key   text NOT NULL,                 -- the configured question it came from
  series_id      text NOT NULL REFERENCES forum.series,
  comparator     text NOT NULL CHECK (comparator IN ('>', '>=', '<', '<=')),
  threshold      double precision CHECK (threshold NOT IN ('NaN', 'Infinity', '-Infinity')),
  reference_date date,
  target_date    date NOT NULL,
  deadline       timestamptz NOT NULL,
  bound_at       timestamptz NOT NULL,
  issue_vintage_id bigint REFERENCES forum.series_vintages, -- the data the forecaster could see
  CHECK ((threshold IS NULL) <> (reference_date IS NULL)),
  CHECK (reference_date IS NULL OR reference_date < target_date),
  CHECK (deadline > bound_at),
  CHECK (deadline > target_date),
  UNIQUE (question_key, target_date)
);
CREATE INDEX forecast_bindings_deadline ON forum.forecast_bindings (deadline);

-- Binding happens at issue, by the lane, and never reaches backwards (FC-4, FC-6).
CREATE FUNCTION forum.check_binding_at_issue() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE f forum.forecasts;
BEGIN
  SELECT * INTO f FROM forum.forecasts WHERE forecast_id = NEW.forecast_id;
  IF f.requested_via <> 'lane' THEN
    RAISE EXCEPTION 'forecast % was requested via %, not the lane: direct forecasts are never bound',
      NEW.forecast_id, f.requested_via USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.bound_at <> f.issued_at THEN
    RAISE EXCEPTION 'forecast % is bound at %, not at issue (%)', NEW.forecast_id, NEW.bound_at, f.issued_at
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER forecast_bindings_at_issue BEFORE INSERT ON forum.forecast_bindings
  FOR EACH ROW EXECUTE FUNCTION forum.check_binding_at_issue();

-- Scores are append-only and versioned: one row per forecast, scoring version and vintage. A newer
-- vintage adds a row; the old one stays, with the observation rows it used.
CREATE TABLE forum.forecast_scores (
  score_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  forecast_id       bigint NOT NULL REFERENCES forum.forecast_bindings,
  scoring_version   text NOT NULL,
  vintage_id        bigint NOT NULL REFERENCES forum.series_vintages,
  status            text NOT NULL CHECK (status IN ('resolved', 'unresolvable')),
  outcome           smallint CHECK (outcome IN (0, 1)),
  probability       double precision NOT NULL CHECK (probability >= 0 AND probability <= 1),
  brier             double precision CHECK (brier >= 0 AND brier <= 1),
  -- The observation rows used, as read from the vintage: (vintage_id, date) names the row,
  -- *_present says whether the vintage had that row at all, *_value is NULL when it was empty.
  target_date       date NOT NULL,
  target_present    boolean NOT NULL,
  target_value      double precision,
  reference_date    date,                       -- NULL for a fixed threshold
  reference_present boolean,
  reference_value   double precision,           -- the threshold, or the reference observation
  reason            text,
  scored_at         timestamptz NOT NULL DEFAULT now(),
  flow_run_id       text,
  CHECK ((status = 'resolved') = (outcome IS NOT NULL AND brier IS NOT NULL)),
  CHECK (status = 'resolved' OR reason IS NOT NULL),
  UNIQUE (forecast_id, scoring_version, vintage_id)
);

CREATE TRIGGER series_vintages_append_only BEFORE UPDATE OR DELETE ON forum.series_vintages
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER series_observations_append_only BEFORE UPDATE OR DELETE ON forum.series_observations
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecasts_append_only BEFORE UPDATE OR DELETE ON forum.forecasts
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecast_bindings_append_only BEFORE UPDATE OR DELETE ON forum.forecast_bindings
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecast_scores_append_only BEFORE UPDATE OR DELETE ON forum.forecast_scores
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER series_vintages_no_truncate BEFORE TRUNCATE ON forum.series_vintages
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER series_observations_no_truncate BEFORE TRUNCATE ON forum.series_observations
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecasts_no_truncate BEFORE TRUNCATE ON forum.forecasts
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecast_bindings_no_truncate BEFORE TRUNCATE ON forum.forecast_bindings
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER forecast_scores_no_truncate BEFORE TRUNCATE ON forum.forecast_scores
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

-- The current score of a forecast under a scoring version: the one made on the newest vintage.
CREATE VIEW forum.current_scores AS
SELECT DISTINCT ON (s.forecast_id, s.scoring_version) s.*, v.label AS vintage_label, v.fetched_at AS vintage_fetched_at
  FROM forum.forecast_scores s JOIN forum.series_vintages v USING (vintage_id)
 ORDER BY s.forecast_id, s.scoring_version, v.fetched_at DESC, s.vintage_id DESC;

-- Live state of every forecast (FC-6): never bound -> unscoreable; bound and not yet scored ->
-- pending; otherwise the status of its current score. `scoring_version` is NULL unless scored.
CREATE FUNCTION forum.forecast_states(p_scoring_version text)
RETURNS TABLE (forecast_id bigint, state text, issued_at timestamptz, deadline timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT f.forecast_id,
         CASE WHEN b.forecast_id IS NULL THEN 'unscoreable'
              WHEN c.status IS NULL THEN 'pending'
              ELSE c.status END,
         f.issued_at, b.deadline
    FROM forum.forecasts f
    LEFT JOIN forum.forecast_bindings b USING (forecast_id)
    LEFT JOIN forum.current_scores c ON c.forecast_id = f.forecast_id AND c.scoring_version = p_scoring_version
$$;

-- The states under the scoring version the application writes today (atlas.scoring.SCORING_VERSION;
-- a test keeps the two in step).
CREATE VIEW forum.forecast_states_current AS SELECT * FROM forum.forecast_states('brier-v1');
