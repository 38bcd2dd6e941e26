"""The threads a GMS process runs its write-side calls on, one call at a time.

With `yielding_niceness`, a second writer thread runs at that much lower CPU priority, and calls
go to it while `yielding()` holds. `lodestar serve --workers` runs its indexing process at a
priority between the two: writes go first while the MCL processor keeps up (a burst is accepted
at the write path's speed), and indexing goes first once it lags far behind (the writers then
take the CPU it leaves, instead of pausing). On Linux niceness is per thread, and a process
without privileges may lower a thread's priority but never raise it again: hence two threads,
each at a fixed priority, rather than one whose priority moves.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lodestar.priority import lower_priority
from mcl_processor.readmodels import collector_paused


class WriterThreads:
    """A GMS process's writer threads (the module docstring says why two). `yielding`: whether
    calls should yield the CPU now (the guards' `indexing_first`)."""

    def __init__(self, yielding_niceness: int = 0, yielding: Callable[[], bool] = lambda: False):
        self._one_at_a_time = threading.Lock()
        self._first = ThreadPoolExecutor(1, thread_name_prefix="gms-writer")
        self._yielding = None if yielding_niceness <= 0 else ThreadPoolExecutor(
            1, thread_name_prefix="gms-writer-yielding", initializer=lower_priority, initargs=(yielding_niceness,))
        self.yielding = yielding

    async def run(self, call: Callable[[], Any], may_yield: bool = True) -> Any:
        """`call()` on a writer thread (the yielding one while `yielding()` holds, unless not
        `may_yield`), once no other call runs, with the cyclic garbage collector paused: a batch
        of 1,000 proposals makes some 100,000 containers and no garbage cycles, and collections
        during it would only scan them again and again."""
        executor = self._first
        if may_yield and self._yielding is not None and self.yielding():
            executor = self._yielding

        def one_at_a_time() -> Any:
            with self._one_at_a_time, collector_paused():
                return call()
        return await asyncio.get_running_loop().run_in_executor(executor, one_at_a_time)

    def shutdown(self) -> None:
        """Wait for the calls submitted, and stop the threads."""
        for executor in (self._first, self._yielding):
            if executor is not None:
                executor.shutdown(wait=True)
