"""Processes and toolchains the pipeline runs on, apart from what it computes or stores.

`pgserver` starts the embedded PostgreSQL and its watchdog; `kernel_build` builds the BM25 kernel's
files with the server's PGXS; `prefect_api` is the local Prefect API the CLI's commands share;
`ops_stack` is `atlas ops`' server, worker and database keeper, and `stack_state` the record of what it runs
(read by `prefect_api` too); `task_runners` picks the Prefect task runner (threads, or Dask) from the environment.
"""
