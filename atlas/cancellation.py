"""A run whose requester went away: the warm flow runner (runtime/flow_runner.py) marks the request cancelled when
the `atlas ask` that sent it dies, and the run's steps look before doing work that only that requester wanted —
above all before sealing a brief no one will read. Plain context, no Prefect: the flow maps `RunCancelled` to a
Cancelled state."""

from __future__ import annotations

import threading
from contextvars import ContextVar, Token

_requester_gone: ContextVar[threading.Event | None] = ContextVar("requester_gone", default=None)


class RunCancelled(Exception):
    """The requester of this run went away: nothing more is done, nothing is stored."""


def cancel_when(event: threading.Event) -> Token:
    """Runs started in this context from now on stop at their next check once `event` is set."""
    return _requester_gone.set(event)


def release(token: Token) -> None:
    _requester_gone.reset(token)


def check(before: str) -> None:
    """Raise RunCancelled when this run's requester has gone."""
    event = _requester_gone.get()
    if event is not None and event.is_set():
        raise RunCancelled(f"cancelled before {before}: the command that asked went away")
