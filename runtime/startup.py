"""How long to wait for a server this machine starts (a Prefect API, the tests' Prefect server): the quiet-machine
figure, scaled by how busy the machine is. A start is CPU-bound (imports, database set-up): with N runnable
processes per core it takes about N times as long, so a fixed timeout that suits a quiet laptop fails at load 10
on 2 cores (issue 36: 83 test errors from one such timeout)."""

from __future__ import annotations

import os

# The most a timeout is stretched: a start that needs longer than this many quiet-machine timeouts has failed.
MAX_LOAD_SCALE = 8.0


def load_scale(load: float | None = None, cores: int | None = None) -> float:
    """Runnable processes per core over the last minute, at least 1 (a quiet machine), at most MAX_LOAD_SCALE."""
    load = os.getloadavg()[0] if load is None else load
    cores = (os.cpu_count() or 1) if cores is None else cores
    return min(MAX_LOAD_SCALE, max(1.0, load / max(cores, 1)))


def load_aware_timeout(quiet_seconds: float, *, load: float | None = None, cores: int | None = None) -> float:
    """`quiet_seconds` scaled by `load_scale`."""
    return quiet_seconds * load_scale(load, cores)
