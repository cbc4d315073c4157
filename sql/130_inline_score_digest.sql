-- Issue 24: the digest of a score row (sql/110's forum.content_digest(forum.forecast_scores)) is declared
-- IMMUTABLE, but its body calls record_out (ROW(...)::text) and convert_to, which are STABLE; PostgreSQL
-- never inlines a SQL function whose body is less immutable than its declaration, so the digest trigger ran it
-- through the SQL-function executor once per row: ~2.2 s of a 100,000-row score insert, against ~0.65 s
-- inlined. Declared STABLE (what its body is) it is inlined. Same body, so every digest stays the same; no
-- index or generated column uses the function.
ALTER FUNCTION forum.content_digest(forum.forecast_scores) STABLE;
