"""Processes as /proc shows them (Linux): the tests that kill a process check what it leaves behind."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def with_descendants(pid: int) -> list[int]:
    """`pid` and every process under it."""
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending += children(current)
    return tree
