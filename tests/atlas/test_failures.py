"""Issue 24 (1): an expected failure (an error the project defines) reads as one line with its cause in a run's
log; an unexpected one keeps its traceback."""

import logging

from forum_atlas.failures import ExpectedFailureLines, is_expected, one_line
from forum_atlas.ingestion.records import InputError


class Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def _log_failure(exc: BaseException, *runs: str) -> list[logging.LogRecord]:
    """What run loggers pass on when Prefect logs `exc` as it does: with its traceback, the task run first."""
    kept = Kept()
    loggers = []
    for run in runs:
        logger = logging.getLogger(f"test-failures.{run}.{id(kept)}")
        logger.addFilter(ExpectedFailureLines(run))
        logger.addHandler(kept)
        logger.propagate = False
        loggers.append(logger)
    try:
        raise exc
    except type(exc):
        for logger in loggers:
            logger.error("Encountered exception during execution: %r", exc, exc_info=True)
    return kept.records


def test_an_expected_failure_is_one_line_with_its_cause_and_notes():
    failure = InputError("a.jsonl:3: not valid JSON\n(Expecting value at column 1)")
    failure.add_note("committed before this failure: nothing.")
    task_line, = _log_failure(failure, "Task run", "Flow run")
    assert task_line.getMessage() == ("Task run failed: InputError: a.jsonl:3: not valid JSON (Expecting value at "
                                      "column 1) committed before this failure: nothing.")
    assert task_line.exc_info is None and task_line.exc_text is None
    assert logging.Formatter().format(task_line).count("\n") == 0, "no traceback"


def test_a_flow_failing_on_its_own_logs_the_cause_once_and_an_unexpected_failure_keeps_its_traceback():
    flow_line, = _log_failure(InputError("x: no such file or folder"), "Flow run")
    assert flow_line.getMessage() == "Flow run failed: InputError: x: no such file or folder"
    task_record, flow_record = _log_failure(KeyError("settings"), "Task run", "Flow run")
    for record in (task_record, flow_record):
        assert record.exc_info and "Traceback" in logging.Formatter().format(record)
    assert not is_expected(KeyError("x")) and is_expected(InputError("x"))
    assert one_line(ValueError("two\nlines")) == "two lines"
