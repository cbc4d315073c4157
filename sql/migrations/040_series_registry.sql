-- The registry of bindable series is data (issue 11): `forum.series` holds every series a forecast
-- may be bound to, registered with `atlas series register` (or seeded here). A row needs a real
-- title, units and publisher: without them nobody else could fetch and cite the same series.

ALTER TABLE forum.series
  ADD CONSTRAINT series_described CHECK (length(btrim(title)) > 0 AND length(btrim(units)) > 0
                                        AND length(btrim(publisher)) > 0) NOT VALID;

-- The four series the lane bound before the registry was data (they were a Python constant).
INSERT INTO forum.series (series_id, title, frequency, units, publisher, citation)
SELECT s.series_id, s.title, s.frequency, s.units, s.publisher,
       s.publisher || ', ' || s.title || ' [' || s.series_id || '], retrieved from FRED, Federal Reserve Bank of '
       || 'St. Louis; https://fred.stlouisfed.org/series/' || s.series_id
  FROM (VALUES
    ('UNRATE', 'Unemployment Rate', 'monthly', 'percent, seasonally adjusted', 'U.S. Bureau of Labor Statistics'),
    ('CPIAUCSL', 'Consumer Price Index for All Urban Consumers: All Items in U.S. City Average', 'monthly',
     'index 1982-1984=100, seasonally adjusted', 'U.S. Bureau of Labor Statistics'),
    ('FEDFUNDS', 'Federal Funds Effective Rate', 'monthly', 'percent, not seasonally adjusted',
     'Board of Governors of the Federal Reserve System (US)'),
    ('DGS10', 'Market Yield on U.S. Treasury Securities at 10-Year Constant Maturity, Quoted on an Investment Basis',
     'daily', 'percent, not seasonally adjusted', 'Board of Governors of the Federal Reserve System (US)')
  ) AS s (series_id, title, frequency, units, publisher)
ON CONFLICT (series_id) DO NOTHING;
