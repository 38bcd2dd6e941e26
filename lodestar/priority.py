"""Lowering a process's CPU priority, so that more urgent work on the machine goes first."""

from __future__ import annotations

import os


def lower_priority(by: int) -> None:
    """Raise the calling thread's niceness by `by` (0: leave it). On Linux niceness is per
    thread and the threads it starts later inherit it: called before any other thread starts,
    it lowers the whole process."""
    if by > 0:
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + by)
