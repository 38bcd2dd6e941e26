"""The consume -> handle -> commit loop (ingest.eventlog.loop) on the embedded SQLite log and on
Kafka: commits only after handle returned, a failing handle commits nothing and gets its records
again (with Retry) or ends the loop with its error (without), stop ends it, a pipeline's batches
and poll waits, and the pull form's commits of what the caller marked done."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from ingest.eventlog import EventLog, LogMessage, LogRecord, partition_for
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.loop import ConsumeLoop, Pipeline, Retry
from ingest.eventlog.sqlite import SqliteEventLog
from tests.support.backends import drop_kafka_names, unique_name

TOPIC = "MetadataChangeProposal_v1"
GROUP = "loop"
KEY = "urn:li:tag:one"  # every record of a test under one key: one partition, in order
PARTITIONS = 2
WAIT = 30.0  # seconds a test waits for a condition before failing


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT}s: {what}"
        time.sleep(0.02)


def offsets(records: list[LogRecord]) -> list[int]:
    return [record.offset for record in records]


class ConsumeLoopContract:
    """What the loop does on every event log; a subclass says how to open one."""

    def open_log(self) -> EventLog:
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _log(self, backend: None) -> Iterator[None]:
        self.log = self.open_log()
        yield
        self.log.close()

    @pytest.fixture
    def backend(self) -> Iterator[None]:
        yield

    def append(self, count: int) -> None:
        self.log.append(TOPIC, [LogMessage(KEY, str(n).encode()) for n in range(count)])

    def committed(self) -> int:
        return self.log.committed(GROUP, TOPIC, partition_for(KEY, PARTITIONS))

    def loop(self, **options) -> ConsumeLoop:
        options.setdefault("poll_timeout", 0.05)
        return ConsumeLoop(self.log, GROUP, [TOPIC], **options)

    @contextmanager
    def running(self, loop: ConsumeLoop, handle: Callable, pipeline: Pipeline | None = None
                ) -> Iterator[threading.Event]:
        """The loop's run in a thread; stopped (and found ended) on the way out."""
        stop = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                loop.run(handle, stop, pipeline)
            except BaseException as err:  # noqa: BLE001  (the test fails with it below)
                failure.append(err)

        thread = threading.Thread(target=run, daemon=True)  # a loop that never ends fails the test, not the run
        thread.start()
        try:
            yield stop
        finally:
            stop.set()
            thread.join(WAIT)
        assert not thread.is_alive(), "the loop did not end once stopped"
        assert not failure, failure

    def test_a_batch_is_committed_only_once_handle_returned(self):
        self.append(6)
        entered, release = threading.Event(), threading.Event()
        handled: list[LogRecord] = []

        def handle(records: list[LogRecord]) -> None:
            handled.extend(records)
            entered.set()
            release.wait(WAIT)

        with self.running(self.loop(), handle):
            assert entered.wait(WAIT)
            time.sleep(0.3)  # time for a commit that would not wait for handle
            assert self.committed() == 0
            release.set()
            wait_until(lambda: self.committed() == 6, "everything committed")
        assert offsets(handled) == list(range(6))

    def test_a_failing_handle_commits_nothing_and_its_batch_comes_again(self):
        self.append(6)
        calls: list[tuple[list[int], int]] = []  # each call's offsets, and the commit when it came
        reports: list[tuple[list[int], BaseException | None]] = []

        def handle(records: list[LogRecord]) -> None:
            calls.append((offsets(records), self.committed()))
            if len(calls) == 1:
                raise RuntimeError("handle failed")

        def report(records: list[LogRecord]) -> None:
            reports.append((offsets(records), sys.exc_info()[1]))

        with self.running(self.loop(max_records=4, retry=Retry(0.05, report)), handle):
            wait_until(lambda: self.committed() == 6, "everything committed after the failure")
        (failed, _), (again, committed_then) = calls[:2]
        assert failed[0] == again[0] == 0 and committed_then == 0  # read again from the committed offset
        assert [offset for call, _ in calls[1:] for offset in call] == list(range(6))
        ((reported, error),) = reports  # reported once, inside the except clause
        assert reported == failed and str(error) == "handle failed"

    def test_without_retry_a_failure_ends_the_loop_with_it_and_nothing_is_committed(self):
        self.append(3)

        def failing(records: list[LogRecord]) -> None:
            raise RuntimeError("handle failed")

        with pytest.raises(RuntimeError, match="handle failed"):
            self.loop().run(failing, threading.Event())
        assert self.committed() == 0
        handled: list[LogRecord] = []
        with self.running(self.loop(), handled.extend):  # the group's next member gets it all
            wait_until(lambda: self.committed() == 3, "everything committed by the next member")
        assert offsets(handled) == [0, 1, 2]

    def test_stop_ends_an_idle_loop_and_one_stopped_in_handle_after_committing_its_batch(self):
        with self.running(self.loop(), lambda records: None):  # fails unless the loop ends once stopped
            time.sleep(0.2)
        self.append(6)
        stop = threading.Event()
        handled: list[list[int]] = []

        def handle(records: list[LogRecord]) -> None:
            handled.append(offsets(records))
            stop.set()

        thread = threading.Thread(target=self.loop(max_records=2).run, args=(handle, stop), daemon=True)
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert handled == [[0, 1]] and self.committed() == 2

    def test_a_pipeline_batches_what_it_held_back_and_polls_without_waiting_meanwhile(self):
        self.append(6)

        class HoldBack(Pipeline[list[str]]):
            """Holds polled records until a poll finds none; the batch is their values, decoded."""

            def __init__(self) -> None:
                self.held: list[LogRecord] = []
                self.since = 0.0  # when the records held came
                self.held_for: list[float] = []
                self.cleared = 0

            def wait(self, poll_timeout: float) -> float:
                return 0 if self.held else poll_timeout

            def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], list[str]] | None:
                if polled and not self.held:
                    self.since = time.monotonic()
                self.held += polled
                if polled or not self.held:
                    return None
                self.held_for.append(time.monotonic() - self.since)
                records, self.held = self.held, []
                return records, [record.value.decode() for record in records]

            def clear(self) -> None:
                self.held = []
                self.cleared += 1

        pipeline = HoldBack()
        batches: list[list[str]] = []

        def handle(values: list[str]) -> None:
            batches.append(values)
            if len(batches) == 1:
                raise RuntimeError("handle failed")  # the pipeline is cleared; the records come again

        poll_timeout = 3.0
        loop = self.loop(max_records=2, poll_timeout=poll_timeout, retry=Retry(0.05, lambda records: None))
        with self.running(loop, handle, pipeline):
            wait_until(lambda: self.committed() == 6, "everything committed")
        assert batches[0][0] == batches[1][0] == "0" and pipeline.cleared == 1
        assert [value for batch in batches[1:] for value in batch] == [str(n) for n in range(6)]
        assert max(pipeline.held_for) < poll_timeout / 2  # while it held records, polls did not wait

    def test_pulled_batches_commit_what_the_caller_marked_done_as_it_asks_for_the_next(self):
        self.append(6)

        class EveryPoll(Pipeline[list[LogRecord]]):
            def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], list[LogRecord]]:
                return polled, polled

        loop, stop = self.loop(max_records=4, commit_interval=0), threading.Event()
        batches = loop.batches(stop, EveryPoll())
        try:
            first = next(batch for batch in batches if batch)
            loop.done(first[:1])
            assert self.committed() == 0  # not before the caller asks for the next batch
            next(batches)
            assert self.committed() == 1
            loop.done(first)
            stop.set()
            assert list(batches) == []
            assert self.committed() == len(first)
        finally:
            loop.close()

    def test_with_a_commit_interval_what_was_done_is_committed_when_due_and_at_the_end(self):
        self.append(6)

        class EveryPoll(Pipeline[list[LogRecord]]):
            def next(self, polled: list[LogRecord]) -> tuple[list[LogRecord], list[LogRecord]]:
                return polled, polled

        loop, stop = self.loop(max_records=4, commit_interval=3600), threading.Event()
        batches = loop.batches(stop, EveryPoll())
        try:
            first = next(batch for batch in batches if batch)
            loop.done(first)
            next(batches)
            assert self.committed() == 0  # not due for an hour
            stop.set()
            assert list(batches) == []
            assert self.committed() == len(first)  # committed as the iteration ended
        finally:
            loop.close()


class TestConsumeLoopOnSqlite(ConsumeLoopContract):
    @pytest.fixture
    def backend(self, tmp_path) -> Iterator[None]:
        self.path = tmp_path / "log.db"
        yield

    def open_log(self) -> EventLog:
        return SqliteEventLog(self.path, partitions=PARTITIONS)


class TestConsumeLoopOnKafka(ConsumeLoopContract):
    @pytest.fixture
    def backend(self, kafka_bootstrap: str) -> Iterator[None]:
        self.bootstrap, self.prefix = kafka_bootstrap, unique_name("loop") + "-"
        yield
        drop_kafka_names(kafka_bootstrap, self.prefix)

    def open_log(self) -> EventLog:
        return KafkaEventLog(self.bootstrap, self.prefix, partitions=PARTITIONS, session_timeout_ms=6000,
                             timeout=WAIT)
