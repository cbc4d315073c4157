"""One file per Prefect flow; each reads as its DAG."""
