-- Forecasts: binding checks, vintage coverage, forecast states, scoring versions and score checks.

-- Binding happens at issue, by the lane, and never reaches backwards (FC-4, FC-6).
CREATE OR REPLACE FUNCTION forum.check_binding_at_issue() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- Dates of `p_covered` that `p_covering` lacks, in date order.
CREATE OR REPLACE FUNCTION forum.vintage_uncovered_dates(p_covered bigint, p_covering bigint)
RETURNS SETOF date LANGUAGE sql STABLE AS $$
  SELECT o.observation_date FROM forum.series_observations o
   WHERE o.vintage_id = p_covered
     AND NOT EXISTS (SELECT 1 FROM forum.series_observations n
                      WHERE n.vintage_id = p_covering AND n.observation_date = o.observation_date)
   ORDER BY o.observation_date
$$;

-- The newest full (non-partial) vintage of a series fetched no later than `p_as_of` (NULL: ever).
CREATE OR REPLACE FUNCTION forum.newest_vintage(p_series_id text, p_as_of timestamptz)
RETURNS SETOF forum.series_vintages LANGUAGE sql STABLE AS $$
  SELECT * FROM forum.series_vintages
   WHERE series_id = p_series_id AND NOT partial AND (p_as_of IS NULL OR fetched_at <= p_as_of)
   ORDER BY fetched_at DESC, vintage_id DESC LIMIT 1
$$;

-- Checked at commit, once the vintage's observations are in (they are written after its row).
CREATE OR REPLACE FUNCTION forum.check_vintage_coverage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  neighbour forum.series_vintages;
  lacking date[];
BEGIN
  IF NEW.partial THEN
    RETURN NULL;
  END IF;
  SELECT * INTO neighbour FROM forum.series_vintages
   WHERE series_id = NEW.series_id AND NOT partial AND vintage_id <> NEW.vintage_id
     AND (fetched_at, vintage_id) < (NEW.fetched_at, NEW.vintage_id)
   ORDER BY fetched_at DESC, vintage_id DESC LIMIT 1;
  IF FOUND THEN
    lacking := ARRAY(SELECT forum.vintage_uncovered_dates(neighbour.vintage_id, NEW.vintage_id));
    IF cardinality(lacking) > 0 THEN
      RAISE EXCEPTION '% vintage % (#%) lacks % date(s) that the previous vintage % (#%) covers, first: %; store it as partial or not at all',
        NEW.series_id, NEW.label, NEW.vintage_id, cardinality(lacking), neighbour.label, neighbour.vintage_id,
        array_to_string(lacking[1:5], ', ') USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  SELECT * INTO neighbour FROM forum.series_vintages
   WHERE series_id = NEW.series_id AND NOT partial AND vintage_id <> NEW.vintage_id
     AND (fetched_at, vintage_id) > (NEW.fetched_at, NEW.vintage_id)
   ORDER BY fetched_at, vintage_id LIMIT 1;
  IF FOUND THEN
    lacking := ARRAY(SELECT forum.vintage_uncovered_dates(NEW.vintage_id, neighbour.vintage_id));
    IF cardinality(lacking) > 0 THEN
      RAISE EXCEPTION '% vintage % (#%) has % date(s) that the later vintage % (#%) lacks, first: %; store it as partial or not at all',
        NEW.series_id, NEW.label, NEW.vintage_id, cardinality(lacking), neighbour.label, neighbour.vintage_id,
        array_to_string(lacking[1:5], ', ') USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  RETURN NULL;
END $$;

-- A partial vintage is never what a forecast was issued on, nor what it is scored on.
CREATE OR REPLACE FUNCTION forum.check_binding_vintage_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.issue_vintage_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM forum.series_vintages WHERE vintage_id = NEW.issue_vintage_id AND partial) THEN
    RAISE EXCEPTION 'forecast % cannot be issued on vintage %: it is partial', NEW.forecast_id, NEW.issue_vintage_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION forum.check_score_vintage_full() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bad record;
BEGIN
  SELECT n.forecast_id, n.vintage_id INTO bad
    FROM new_scores n JOIN forum.series_vintages v ON v.vintage_id = n.vintage_id
   WHERE v.partial LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'score for forecast % on vintage %: the vintage is partial and is never used for resolution',
      bad.forecast_id, bad.vintage_id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

-- Live state of every forecast under a scoring version (FC-6): never bound -> unscoreable. "Could not fetch" is
-- never "unresolvable": a bound forecast past its deadline is
-- 'waiting_for_data' (pending, counted apart) until a vintage fetched after its deadline settles it. The
-- scorer writes no unresolvable row from a vintage fetched by the deadline; rows an older
-- scorer wrote so (a night whose fetch failed) stay, append-only, and read as waiting_for_data here until
-- a later vintage settles the forecast (a FORECASTS_RECLASSIFIED event names each one and why).
CREATE OR REPLACE FUNCTION forum.forecast_states(p_scoring_version text)
RETURNS TABLE (forecast_id bigint, state text, issued_at timestamptz, deadline timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT f.forecast_id,
         CASE WHEN b.forecast_id IS NULL THEN 'unscoreable'
              WHEN c.status = 'resolved'
                OR (c.status = 'unresolvable' AND c.vintage_fetched_at > b.deadline) THEN c.status
              WHEN b.deadline <= now() THEN 'waiting_for_data'
              ELSE 'pending' END,
         f.issued_at, b.deadline
    FROM forum.forecasts f
    LEFT JOIN forum.forecast_bindings b USING (forecast_id)
    LEFT JOIN forum.current_scores c ON c.forecast_id = f.forecast_id AND c.scoring_version = p_scoring_version
$$;

-- A version's rule never changes once scores cite it (a change is a new version); only which one is the
-- default may move, and exactly one is.
CREATE OR REPLACE FUNCTION forum.check_scoring_version_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (OLD.version, OLD.measure, OLD.clip, OLD.records_deadline_vintage, OLD.description, OLD.registered_at)
     IS DISTINCT FROM
     (NEW.version, NEW.measure, NEW.clip, NEW.records_deadline_vintage, NEW.description, NEW.registered_at) THEN
    RAISE EXCEPTION 'scoring version % keeps its rule: only is_default may change (a new rule is a new version)',
      OLD.version USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION forum.check_one_default_scoring_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  SELECT count(*) INTO n FROM forum.scoring_versions WHERE is_default;
  IF n <> 1 THEN
    RAISE EXCEPTION 'exactly one scoring version is the default, not %', n USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

-- Each INSERT statement's score rows against their binding, vintage and version, once per statement
-- (per-row foreign keys cost ~30 us a row on ~100k-row nights): the binding and vintage exist, of one series; the
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

-- FC-10, both sides (issue 25, sql/migrations/140): a full vintage fetched before a stored one must hold every
-- observation date that later vintage holds from the new vintage's first date to the last one published when
-- the new vintage was fetched. "Published" is read from the later vintage: its publication lag (fetch date less
-- its last date) plus one period (its last two dates) of margin for a lag that varies; never before the new
-- vintage's own last date. The same rule as forum_atlas.series.coverage.published_by, which the loader applies
-- first to name what is lacking.
CREATE OR REPLACE FUNCTION forum.check_vintage_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  later forum.series_vintages;
  last_two date[];
  through date := NEW.last_date;
  lacking date[];
BEGIN
  IF NEW.partial THEN
    RETURN NULL;
  END IF;
  SELECT * INTO later FROM forum.series_vintages
   WHERE series_id = NEW.series_id AND NOT partial AND vintage_id <> NEW.vintage_id
     AND (fetched_at, vintage_id) > (NEW.fetched_at, NEW.vintage_id)
   ORDER BY fetched_at, vintage_id LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  last_two := ARRAY(SELECT observation_date FROM forum.series_observations WHERE vintage_id = later.vintage_id
                     ORDER BY observation_date DESC LIMIT 2);
  IF cardinality(last_two) = 2 THEN
    through := greatest(through, NEW.fetched_at::date - ((later.fetched_at::date - last_two[1])
                                                         + (last_two[1] - last_two[2])));
  END IF;
  lacking := ARRAY(SELECT d FROM forum.vintage_uncovered_dates(later.vintage_id, NEW.vintage_id) AS d
                    WHERE d BETWEEN NEW.first_date AND through);
  IF cardinality(lacking) > 0 THEN
    RAISE EXCEPTION '% vintage % (#%) lacks % date(s) up to % that the later vintage % (#%) covers, first: %; store it as partial or not at all',
      NEW.series_id, NEW.label, NEW.vintage_id, cardinality(lacking), through, later.label, later.vintage_id,
      array_to_string(lacking[1:5], ', ') USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
