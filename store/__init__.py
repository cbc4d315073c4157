"""The only package that talks to PostgreSQL.

`pgserver` starts the embedded server, `db` owns the connection pool, `migrations` applies `sql/`,
and one repository module per domain holds that domain's SQL.
"""
