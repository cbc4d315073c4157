"""How a failure reads: expected failures (the project's own typed errors: a missing path, a source conflict,
a refused batch, a missing key) as one line with their cause; anything else keeps its traceback.

`ExpectedFailureLines` applies that to Prefect's flow- and task-run log records (Prefect logs every failure
with its traceback, twice: once for the task run, once for the flow run it fails). It is plain `logging`, so
it sits on the records whatever the handler: the run's log in the Prefect API, or the terminal with -v.
"""

from __future__ import annotations

import logging

PROJECT_PACKAGE = "forum_atlas"
# the loggers Prefect's engine logs task and flow runs through (their records go to the API), by what they log
RUN_LOGGERS = {"prefect.task_runs": "Task run", "prefect.flow_runs": "Flow run"}


def is_expected(exc: BaseException) -> bool:
    """An error the project raises on purpose, with a message that says what to do: one its own code defines."""
    module = type(exc).__module__
    return module == PROJECT_PACKAGE or module.startswith(PROJECT_PACKAGE + ".")


def one_line(exc: BaseException) -> str:
    """The error and its notes in one line: a pydantic validation error as "field: problem; …"."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in errors())
    # Notes carry what a failure left behind (e.g. what an ingest committed before it).
    return " ".join(" ".join([str(exc), *getattr(exc, "__notes__", [])]).split())


class ExpectedFailureLines(logging.Filter):
    """On the logger of `run`s ("Task run", "Flow run"): a record that carries an expected failure becomes one
    line, `<run> failed: <type>: <cause and notes>`, without its traceback; a flow run's record of a failure a
    task run already logged is dropped (the flow run's log, which shows its task runs' lines, has the cause
    once). Records of unexpected failures pass unchanged."""

    _LOGGED = "__atlas_failure_logged__"

    def __init__(self, run: str):
        super().__init__()
        self.run = run

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not is_expected(exc):
            return True
        if self.run == "Flow run" and getattr(exc, self._LOGGED, False):
            return False
        try:
            setattr(exc, self._LOGGED, True)
        except AttributeError:   # an exception type with __slots__: its cause is then logged twice, still one line each
            pass
        record.msg, record.args = f"{self.run} failed: {type(exc).__name__}: {one_line(exc)}", ()
        record.exc_info, record.exc_text = None, None
        return True


def install_expected_failure_lines() -> None:
    """Put the filter on the run loggers of this process, once (logging configuration keeps a logger's filters)."""
    for name, run in RUN_LOGGERS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, ExpectedFailureLines) for f in logger.filters):
            logger.addFilter(ExpectedFailureLines(run))
