"""Processes racing: several processes released at the same moment."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from collections.abc import Callable
from pathlib import Path


def _when_released(target: Callable[[Path], None], path: Path, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    target(path)


def race(target: Callable[[Path], None], path: Path, processes: int = 4) -> list[int]:
    """The exit codes of `processes` processes each running `target(path)` (a module-level
    function) at once; an exception in one makes its code 1.

    They are forked from a forkserver, not from the test process: a fork copies the locks that
    the test process's other threads (drivers, checkpointers, earlier tests' leftovers) hold at
    that moment, and a child that needs one waits for ever."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([target.__module__])  # (used when this process starts its forkserver)
    start = context.Barrier(processes)
    running = [context.Process(target=_when_released, args=(target, path, start)) for _ in range(processes)]
    for process in running:
        process.start()
    for process in running:
        process.join()
    return [process.exitcode for process in running]
