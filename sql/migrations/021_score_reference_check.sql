-- Nightly scoring appends ~100k score rows at a time. Their references (the binding, the vintage)
-- are checked once per INSERT statement instead of by per-row foreign-key triggers, which cost
-- ~30 µs a row; the check also refuses a vintage of a different series than the binding's.
-- Bindings and vintages refuse DELETE (020), so a referenced row can never disappear afterwards.
ALTER TABLE forum.forecast_scores
  DROP CONSTRAINT forecast_scores_forecast_id_fkey,
  DROP CONSTRAINT forecast_scores_vintage_id_fkey;

CREATE FUNCTION forum.check_score_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bad record;
BEGIN
  SELECT n.forecast_id, n.vintage_id,
         b.forecast_id IS NULL AS unbound, v.vintage_id IS NULL AS no_vintage, b.series_id, v.series_id AS v_series
    INTO bad
    FROM new_scores n
    LEFT JOIN forum.forecast_bindings b ON b.forecast_id = n.forecast_id
    LEFT JOIN forum.series_vintages v ON v.vintage_id = n.vintage_id
   WHERE b.forecast_id IS NULL OR v.vintage_id IS NULL OR b.series_id <> v.series_id
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'score for forecast % on vintage %: %', bad.forecast_id, bad.vintage_id,
      CASE WHEN bad.unbound THEN 'the forecast is not bound (only bound forecasts are scored)'
           WHEN bad.no_vintage THEN 'no such vintage'
           ELSE format('the vintage is of %s, the binding of %s', bad.v_series, bad.series_id) END
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER forecast_scores_references AFTER INSERT ON forum.forecast_scores
  REFERENCING NEW TABLE AS new_scores FOR EACH STATEMENT EXECUTE FUNCTION forum.check_score_references();
