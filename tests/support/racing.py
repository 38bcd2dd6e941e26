"""Processes racing: several forked processes released at the same moment."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from collections.abc import Callable
from pathlib import Path


def _when_released(target: Callable[[Path], None], path: Path, start: multiprocessing.synchronize.Barrier) -> None:
    start.wait()
    target(path)


def race(target: Callable[[Path], None], path: Path, processes: int = 4) -> list[int]:
    """The exit codes of `processes` forked processes each running `target(path)` at once (an
    exception in one makes its code 1)."""
    forked = multiprocessing.get_context("fork")
    start = forked.Barrier(processes)
    running = [forked.Process(target=_when_released, args=(target, path, start)) for _ in range(processes)]
    for process in running:
        process.start()
    for process in running:
        process.join()
    return [process.exitcode for process in running]
