"""Secrets never written: one filter for every log line, traceback and error message the project writes.

A provider that echoes the key in its error (an OpenAI-compatible endpoint's 401 says "Incorrect API key
provided: sk-…") put the whole key in the runner's log inside the chained traceback. `redact` replaces, in any
text, the values of the configured keys (the environment's *_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD variables
and the values of Secret blocks and block fields a run read, `remember_secret`) and what looks like a key
whatever its source (`sk-…`, `Bearer …`, `pa-…`). `RedactingFilter` applies it to log records (message,
arguments, traceback); `RedactingStream` to a raw stream (a runner's stderr, where `traceback.print_exc` writes).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import TextIO

MASK = "[redacted]"
MIN_SECRET_CHARS = 8   # shorter values ("1", "true") would mask ordinary words; no real key is that short
_SECRET_VARIABLE = re.compile(r"(?:_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD)$|^(?:API_KEY|TOKEN|SECRET|PASSWORD)$")
# Key shapes: OpenAI (sk-, sk-proj-), Voyage (pa-), Anthropic-style (sk-ant-), a bearer token, basic-auth in a URL.
_KEY_SHAPES = re.compile(
    r"\b(?:sk|pa|rk)-[A-Za-z0-9_\-]{12,}"
    r"|(?<=Bearer )[A-Za-z0-9._~+/\-]{8,}=*"
    r"|(?<=://)[^/\s:@]+:[^/\s@]{4,}(?=@)")

_remembered: set[str] = set()
_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """A secret this process holds that no environment variable names (a Secret block's value)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _lock:
            _remembered.add(value)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The values to mask, longest first (a key that contains another is masked whole)."""
    environ = os.environ if environ is None else environ
    found = {value for name, value in environ.items()
             if _SECRET_VARIABLE.search(name.upper()) and len(value) >= MIN_SECRET_CHARS}
    with _lock:
        found |= _remembered
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    for value in secret_values():
        if value in text:
            text = text.replace(value, MASK)
    return _KEY_SHAPES.sub(MASK, text)


class RedactingFilter(logging.Filter):
    """On a handler: the record's message and traceback as they will be written, secrets masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:   # noqa: BLE001 — a malformed record is the logging module's to report, unredacted args aside
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


FILTER = RedactingFilter()


def filter_all_handlers() -> int:
    """Put the filter on every handler of every logger configured so far (the root's, Prefect's console and API
    handlers, the project's); returns how many were new. Idempotent: call it again after a library adds one."""
    added = 0
    known = list(logging.Logger.manager.loggerDict.values())   # a copy: another thread may add a logger meanwhile
    loggers = [logging.getLogger(), *(logger for logger in known if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if FILTER not in handler.filters:
                handler.addFilter(FILTER)
                added += 1
    return added


class RedactingStream:
    """A text stream whose writes are redacted line by line (a secret is never split across two writes' output)."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        complete, _, self._pending = self._pending.rpartition("\n")
        if complete:
            self._stream.write(redact(complete + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(redact(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
