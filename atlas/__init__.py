"""Forum Atlas core: plain Python logic (no Prefect, no database driver).

Flows and tasks wrap these modules; the `store` package owns every database access.
"""

__version__ = "0.1.0"
