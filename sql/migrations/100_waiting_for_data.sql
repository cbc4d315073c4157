-- Issue 24 (3): "could not fetch" is never "unresolvable". A bound forecast past its deadline is
-- 'waiting_for_data' (pending, counted apart) until a vintage fetched after its deadline settles it. The
-- scorer no longer writes an unresolvable row from a vintage fetched by the deadline; rows an older
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
