-- FC-10, both sides (issue 25): a full vintage fetched before a stored one must hold every observation
-- date that later vintage holds from the new vintage's first date to the last one published when the
-- new vintage was fetched. sql/031's check (kept as it is) only asks that the new vintage's dates be in
-- the later one, so a one-row file loaded with a fetch time older than every stored vintage was stored
-- as full. "Published" is read from the later vintage: its publication lag (fetch date less its last
-- date) plus one period (its last two dates) of margin for a lag that varies; never before the new
-- vintage's own last date. The same rule as forum_atlas.series.coverage.published_by, which the loader
-- applies first to name what is lacking.

CREATE FUNCTION forum.check_vintage_history() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE CONSTRAINT TRIGGER series_vintages_history AFTER INSERT ON forum.series_vintages
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION forum.check_vintage_history();
