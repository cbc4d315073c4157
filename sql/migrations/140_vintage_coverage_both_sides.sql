-- FC-10, both sides (issue 25): a full vintage fetched before a stored one must hold every observation
-- date that later vintage holds from the new vintage's first date to the last one published when the
-- new vintage was fetched. sql/031's check (kept as it is) only asks that the new vintage's dates be in
-- the later one, so a one-row file loaded with a fetch time older than every stored vintage was stored
-- as full. "Published" is read from the later vintage: its publication lag (fetch date less its last
-- date) plus one period (its last two dates) of margin for a lag that varies; never before the new
-- vintage's own last date. The same rule as forum_atlas.series.coverage.published_by, which the loader
-- applies first to name what is lacking.

-- The trigger's function: its current definition is in sql/functions/forecasts.sql, which replaces this
-- declaration in the same transaction.
CREATE FUNCTION forum.check_vintage_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'forum.check_vintage_history is defined by sql/functions/forecasts.sql';
END $$;
CREATE CONSTRAINT TRIGGER series_vintages_history AFTER INSERT ON forum.series_vintages
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION forum.check_vintage_history();
