"""A rolling restart under load: the servers' nodes restarted one at a time while clients write,
each checked on its own (tests/faults/test_cluster_faults.py restarts one node of each engine,
bench/reliability.py --cluster every node).

Two `lodestar gms` and two `lodestar mcl-processor` run on the stack
(tests.support.fault_injection.start_processes). Each node's restart is a phase with entities
of its own: a REST client writes new entities to gms-b, a lot at a time, from before the node
stops until it has rejoined (finishing the lot it is on); the node stops; the phase's steps from
the MCP topic are appended while it is down (their first steps were applied before the first
restart, as run_distributed does); it is started and awaited until it has rejoined (the
`restart` fault's recovery, e.g. tests.support.cluster.rolling_restart). Then the phase
converges (every MCP applied, every MCL on the topic and indexed) and its entities are checked
as run_distributed checks them, with `lodestar check` on the whole stack."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from tests.support.fault_injection import (
    Driver,
    Fault,
    RestTarget,
    RunReport,
    Work,
    append,
    assert_settled,
    await_converged,
    seed_round,
    start_processes,
    verify_distributed,
    workload,
)

LOT = 10  # entities a REST client writes before it looks whether to stop


class Writer(threading.Thread):
    """A REST client writing new entities (numbered from `first`), LOT at a time, every chain of
    a lot to its end, until told to stop (one lot at least)."""

    def __init__(self, target: RestTarget, first: int):
        super().__init__(daemon=True)
        self.target, self.next = target, first
        self.stop = threading.Event()
        self.works: list[Work] = []
        self.drivers: list[Driver] = []
        self.answered = 0  # MCPs sent and answered so far

    def run(self) -> None:
        while True:
            work = workload(LOT, first=self.next)
            self.next += LOT
            driver = Driver(self.target, work, list(work.steps), LOT, self._answered)
            self.works.append(work)
            self.drivers.append(driver)
            driver.run()
            if driver.failures or self.stop.is_set():
                return

    def _answered(self, n: int) -> None:
        self.answered += n


@dataclass
class Restarted:
    """One node's phase: its checks, the REST MCPs answered while it was down or rejoining, and
    the retryable answers the REST client got (429 or 503) in the phase."""

    what: str
    report: RunReport
    meanwhile: int
    refused: int
    restart_seconds: float

    def summary(self) -> str:
        return (f"{self.report.summary(self.what)}; {self.meanwhile} REST MCPs answered while it was down"
                f" or rejoining, back in {self.restart_seconds:.0f}s; REST answers 429 or 503: {self.refused},"
                f" proposals sent again after no answer: {self.report.resent}")


def run_rolling(stack: Any, restart: Fault, nodes: int, entities: int) -> list[Restarted]:
    """`nodes` restarts (`restart(k)` stops the k-th node and returns how to bring it back), one
    at a time, each with `entities` entities from the MCP topic and the REST client's lots."""
    running = start_processes(stack)
    works = [workload(entities, first=k * entities) for k in range(nodes)]
    rests = seed_round(stack, works)
    target = RestTarget(running["gms-b"].client().server)
    first = nodes * entities
    restarted = []
    for k, (work, rest) in enumerate(zip(works, rests, strict=True)):
        started = time.monotonic()
        writer = Writer(target, first)
        writer.start()
        stack.await_(lambda w=writer: w.answered or not w.is_alive(), "the REST client's first answer")
        answered, stopping = writer.answered, time.monotonic()
        what, recover = restart(k)
        stack.note(f"restart {k + 1}: {what}")
        try:
            append(stack, rest)
            stack.note(f"restart {k + 1}: {len(rest)} MCPs appended to the MCP topic")
        finally:  # a failed run leaves no node down behind it
            recover()
        back = time.monotonic()
        meanwhile = writer.answered - answered
        stack.note(f"restart {k + 1}: back after {back - stopping:.0f}s")
        writer.stop.set()
        writer.join(600)
        assert not writer.is_alive(), "the REST client did not finish its lot within 600 s"
        assert_settled(writer.drivers, what)
        written = time.monotonic()
        phase = [work, *writer.works]
        await_converged(stack, running["gms-a"], phase)
        converged = time.monotonic() - written
        stack.note(f"restart {k + 1}: converged")
        verdict, absorbed = verify_distributed(stack, phase, writer.drivers)
        report = RunReport(sum(w.mcps for w in phase), 1, time.monotonic() - started,
                           sum(d.resent for d in writer.drivers), absorbed, verdict, converged)
        restarted.append(Restarted(what, report, meanwhile, sum(d.refused for d in writer.drivers), back - stopping))
        stack.note(restarted[-1].summary())
        first = writer.next
    return restarted
