"""The writer threads of a GMS process: one call at a time, at a lower CPU priority while asked."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from lodestar.api.writers import WriterThreads


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)  # on Linux, the calling thread's


def test_calls_run_on_the_lower_priority_thread_only_while_yielding_holds():
    yielding = [False]
    writers = WriterThreads(yielding_niceness=5, yielding=lambda: yielding[0])
    base = _niceness()
    try:
        first = asyncio.run(writers.run(lambda: (threading.current_thread().name, _niceness())))
        yielding[0] = True
        second = asyncio.run(writers.run(lambda: (threading.current_thread().name, _niceness())))
        not_yielding = asyncio.run(writers.run(lambda: (threading.current_thread().name, _niceness()),
                                               may_yield=False))  # a query's body, say
        yielding[0] = False
        third = asyncio.run(writers.run(lambda: (threading.current_thread().name, _niceness())))
    finally:
        writers.shutdown()
    assert first[0].startswith("gms-writer_") and first[1] == base
    assert second[0].startswith("gms-writer-yielding_") and second[1] == min(base + 5, 19)  # 19: the lowest
    assert third == not_yielding == first


def test_without_a_yielding_niceness_every_call_runs_on_the_one_writer_thread():
    writers = WriterThreads(yielding_niceness=0, yielding=lambda: True)
    try:
        name = asyncio.run(writers.run(lambda: threading.current_thread().name))
    finally:
        writers.shutdown()
    assert name.startswith("gms-writer_")


def test_calls_run_one_at_a_time_across_both_threads():
    turn = [0]
    writers = WriterThreads(yielding_niceness=3, yielding=lambda: turn.__setitem__(0, turn[0] + 1) or turn[0] % 2 == 0)
    running, most = [0], [0]

    def call() -> None:
        running[0] += 1
        most[0] = max(most[0], running[0])
        time.sleep(0.01)  # long enough for the other thread to start one meanwhile, were it allowed
        running[0] -= 1

    async def many() -> None:
        await asyncio.gather(*(writers.run(call) for _ in range(10)))
    try:
        asyncio.run(many())
    finally:
        writers.shutdown()
    assert most[0] == 1 and turn[0] == 10
