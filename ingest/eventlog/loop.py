"""The one consume -> handle -> commit loop of a consumer group: GMS's MCP consumer, the MCL
processor and subscriptions all read the log through it.

Each polled batch is handed to the caller and its positions are committed only once it was
handled (at least once; per partition in log order, one batch at a time). A failure, while
polling, handling or committing, either goes to the caller, or (with a `Retry`) is reported,
the consumer closed and, after a pause, a new one reads again from the group's committed
offsets: an outage pauses consumption instead of ending it. A `Pipeline` sits between polling
and handling, for work begun on the next batches while one is handled.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Generic, TypeVar

from ingest.eventlog import Consumer, EventLog, LogRecord

B = TypeVar("B")


class Pipeline(ABC, Generic[B]):
    """Between polling and handling: which polled batch to handle next, and what its handler gets
    (work begun on polled batches, e.g. decoding in worker processes, goes on meanwhile)."""

    def wait(self, poll_timeout: float) -> float | None:
        """Seconds the next poll may wait for records; None: handle what is at hand, no poll."""
        return poll_timeout

    @abstractmethod
    def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], B] | None:
        """Given a poll's records (maybe none): the batch to handle now, as the records its
        commit covers and what the handler gets; None to poll again first."""

    def clear(self) -> None:  # noqa: B027 (a pipeline holding nothing has nothing to clear)
        """Forget the batches not handled yet (after a failure: they are read again)."""


class _Direct(Pipeline[list[LogRecord]]):
    """Each poll's records are the batch, handled at once; a poll that found none is no batch."""

    def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], list[LogRecord]] | None:
        return (polled, polled) if polled else None


@dataclass(frozen=True)
class Retry:
    """Outlive failures: `report` is called in the except clause (so it may log the traceback)
    with the records of the batch being handled (none when polling failed); then the consumer
    is closed, the pipeline cleared, and `after` seconds later a new consumer reads again from
    the group's committed offsets."""

    after: float
    report: Callable[[list[LogRecord]], object]


class ConsumeLoop:
    """A member of consumer group `group` on `topics`, polling up to `max_records` records and
    waiting up to `poll_timeout` seconds for them. `start`: the first consumer's start positions
    (see EventLog.consumer); `retry`: the failure policy (None: failures are raised);
    `commit_interval`: seconds between commits of the positions handled (0: after every batch;
    None: only commit() commits them); `on_commit(records)` follows every commit."""

    def __init__(self, log_: EventLog, group: str, topics: Sequence[str], *,
                 start: Mapping[tuple[str, int], int] | None = None, max_records: int = 500,
                 poll_timeout: float = 0.5, retry: Retry | None = None, commit_interval: float | None = 0.0,
                 on_commit: Callable[[Sequence[LogRecord]], object] | None = None):
        self.log = log_
        self.group = group
        self.topics = topics
        self.max_records = max_records
        self.poll_timeout = poll_timeout
        self.retry = retry
        self.commit_interval = commit_interval
        self.on_commit = on_commit
        self._start = start
        self._consumer: Consumer | None = None
        self._done: dict[tuple[str, int], LogRecord] = {}  # latest record handled per partition, not committed
        self._last_commit = time.monotonic()

    def consumer(self) -> Consumer:
        """The group member, opened if there is none (the first one at `start`)."""
        if self._consumer is None:
            self._consumer = self.log.consumer(self.group, self.topics, self._start)
            self._start = None
        return self._consumer

    def run(self, handle: Callable[[B], object], stop: threading.Event, pipeline: Pipeline[B] | None = None) -> None:
        """Call handle(batch) for each batch until stop is set, committing what it handled once
        it returned; then leave the group. Without a pipeline, a batch is a poll's records."""
        try:
            for _ in self._turns(stop, pipeline or _Direct(), handle):
                pass
        finally:
            self._drop()

    def batches(self, stop: threading.Event, pipeline: Pipeline[B]) -> Iterator[B]:
        """The batches, until stop is set, for a caller that hands them out between steps of its
        own (a generator): it marks what it handled with done(); that is committed when due as
        it asks for the next batch, and when stop ends the iteration. The consumer stays open
        (close() leaves the group); iterating again goes on from its position."""
        return self._turns(stop, pipeline, None)

    def _turns(self, stop: threading.Event, pipeline: Pipeline[B], handle: Callable[[B], object] | None
               ) -> Iterator[B]:
        while not stop.is_set():
            records: list[LogRecord] = []
            try:
                wait = pipeline.wait(self.poll_timeout)
                ready = pipeline.next([] if wait is None else self.consumer().poll(self.max_records, wait))
                if ready is None:
                    continue
                records, batch = ready
                if handle is None:
                    yield batch
                else:
                    handle(batch)
                    self.done(records)
                if self.commit_interval is not None and \
                        time.monotonic() - self._last_commit >= self.commit_interval:
                    self.commit()
            except Exception:
                if self.retry is None:
                    raise
                self.retry.report(records)
                pipeline.clear()
                self._done.clear()
                self._drop()
                stop.wait(self.retry.after)
        if self.commit_interval is not None:
            self.commit()

    def done(self, records: Iterable[LogRecord]) -> None:
        """Mark records handled (each with everything before it in its partition)."""
        for record in records:
            self._done[(record.topic, record.partition)] = record

    def commit(self, records: Sequence[LogRecord] | None = None) -> None:
        """Commit the positions handled, or those of `records` (each through its partition)."""
        if records is None:
            records = list(self._done.values())
            self._done.clear()
        if records:
            self.consumer().commit(records)
            if self.on_commit is not None:
                self.on_commit(records)
        self._last_commit = time.monotonic()

    def _drop(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            with suppress(Exception):  # a consumer whose backend failed may not close cleanly
                consumer.close()

    def close(self) -> None:
        """Leave the group (what was not committed is read again by the next member)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
