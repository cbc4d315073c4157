-- FC-10, both sides (issue 25): a full vintage fetched before a stored one must hold every observation
-- date that later vintage holds from the new vintage's first date to the last one published when the
-- new vintage was fetched. sql/031 checked only that the new vintage's dates are in the later one, so a
-- one-row file loaded with a fetch time older than every stored vintage was stored as full.
-- "Published" is read from the later vintage: its publication lag (fetch date less its last date) plus
-- one period (its last two dates) of margin for a lag that varies; never before the new vintage's own
-- last date. The same rule as forum_atlas.series.coverage.published_by, which names what is lacking.

CREATE OR REPLACE FUNCTION forum.check_vintage_coverage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  neighbour forum.series_vintages;
  lacking date[];
  last_two date[];
  through date;
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
    last_two := ARRAY(SELECT observation_date FROM forum.series_observations WHERE vintage_id = neighbour.vintage_id
                       ORDER BY observation_date DESC LIMIT 2);
    through := NEW.last_date;
    IF cardinality(last_two) = 2 THEN
      through := greatest(through, NEW.fetched_at::date - ((neighbour.fetched_at::date - last_two[1])
                                                           + (last_two[1] - last_two[2])));
    END IF;
    lacking := ARRAY(SELECT d FROM forum.vintage_uncovered_dates(neighbour.vintage_id, NEW.vintage_id) AS d
                      WHERE d BETWEEN NEW.first_date AND through);
    IF cardinality(lacking) > 0 THEN
      RAISE EXCEPTION '% vintage % (#%) lacks % date(s) up to % that the later vintage % (#%) covers, first: %; store it as partial or not at all',
        NEW.series_id, NEW.label, NEW.vintage_id, cardinality(lacking), through, neighbour.label,
        neighbour.vintage_id, array_to_string(lacking[1:5], ', ') USING ERRCODE = 'check_violation';
    END IF;
    lacking := ARRAY(SELECT forum.vintage_uncovered_dates(NEW.vintage_id, neighbour.vintage_id));
    IF cardinality(lacking) > 0 THEN
      RAISE EXCEPTION '% vintage % (#%) has % date(s) that the later vintage % (#%) lacks, first: %; store it as partial or not at all',
        NEW.series_id, NEW.label, NEW.vintage_id, cardinality(lacking), neighbour.label, neighbour.vintage_id,
        array_to_string(lacking[1:5], ', ') USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  RETURN NULL;
END $$;
