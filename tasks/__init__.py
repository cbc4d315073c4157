"""Thin Prefect tasks: each calls plain logic in `atlas/` and database access in `store/`."""
