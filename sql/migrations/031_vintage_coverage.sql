-- FC-10: a new vintage cannot silently regress. A full vintage must cover every observation date of
-- the full vintage before it (in fetched_at, vintage_id order) and be covered by the one after it;
-- values may be revised, and may be empty (NULL) where the publisher marks them missing, but a date
-- may not disappear. A file that covers less is refused, or stored explicitly as PARTIAL: kept and
-- listed, never the newest vintage for binding, resolution or scoring.

ALTER TABLE forum.series_vintages ADD COLUMN partial boolean NOT NULL DEFAULT false;

-- Dates of `p_covered` that `p_covering` lacks, in date order.
CREATE FUNCTION forum.vintage_uncovered_dates(p_covered bigint, p_covering bigint)
RETURNS SETOF date LANGUAGE sql STABLE AS $$
  SELECT o.observation_date FROM forum.series_observations o
   WHERE o.vintage_id = p_covered
     AND NOT EXISTS (SELECT 1 FROM forum.series_observations n
                      WHERE n.vintage_id = p_covering AND n.observation_date = o.observation_date)
   ORDER BY o.observation_date
$$;

-- The newest full (non-partial) vintage of a series fetched no later than `p_as_of` (NULL: ever).
CREATE FUNCTION forum.newest_vintage(p_series_id text, p_as_of timestamptz)
RETURNS SETOF forum.series_vintages LANGUAGE sql STABLE AS $$
  SELECT * FROM forum.series_vintages
   WHERE series_id = p_series_id AND NOT partial AND (p_as_of IS NULL OR fetched_at <= p_as_of)
   ORDER BY fetched_at DESC, vintage_id DESC LIMIT 1
$$;

-- Checked at commit, once the vintage's observations are in (they are written after its row).
CREATE FUNCTION forum.check_vintage_coverage() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE CONSTRAINT TRIGGER series_vintages_coverage AFTER INSERT ON forum.series_vintages
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION forum.check_vintage_coverage();

-- A partial vintage is never what a forecast was issued on, nor what it is scored on.
CREATE FUNCTION forum.check_binding_vintage_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.issue_vintage_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM forum.series_vintages WHERE vintage_id = NEW.issue_vintage_id AND partial) THEN
    RAISE EXCEPTION 'forecast % cannot be issued on vintage %: it is partial', NEW.forecast_id, NEW.issue_vintage_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER forecast_bindings_full_vintage BEFORE INSERT ON forum.forecast_bindings
  FOR EACH ROW EXECUTE FUNCTION forum.check_binding_vintage_full();

CREATE FUNCTION forum.check_score_vintage_full() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER forecast_scores_full_vintage AFTER INSERT ON forum.forecast_scores
  REFERENCING NEW TABLE AS new_scores FOR EACH STATEMENT EXECUTE FUNCTION forum.check_score_vintage_full();
