"""The event-log port's contract: every adapter (SQLite, Kafka) passes these tests."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator

import pytest

from ingest.eventlog import Consumer, EventLog, LogMessage, LogRecord, partition_for

TOPIC = "MetadataChangeLog_Versioned_v1"


WAIT = 20.0  # seconds a test waits for a condition before failing


def messages(*pairs: tuple[str, str]) -> list[LogMessage]:
    return [LogMessage(key, value.encode()) for key, value in pairs]


def values(records: list[LogRecord]) -> list[bytes]:
    return [record.value for record in records]


def poll_until(consumer: Consumer, count: int, timeout: float = WAIT) -> list[LogRecord]:
    """Exactly `count` records, polled until they are there (fails after timeout seconds)."""
    deadline = time.monotonic() + timeout
    records: list[LogRecord] = []
    while len(records) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {len(records)} of {count} records within {timeout}s"
        records += consumer.poll(count - len(records), remaining)
    return records


class EventLogContract(ABC):
    """What every event-log adapter does. A subclass implements open_log."""

    PARTITIONS = 4

    @abstractmethod
    def open_log(self) -> EventLog:
        """A new log object over this test's storage (every call sees the same topics), with
        PARTITIONS partitions per topic."""

    @pytest.fixture(autouse=True)
    def _close_logs(self) -> Iterator[None]:
        self._opened: list[EventLog] = []
        yield
        for log in self._opened:
            log.close()

    def log(self) -> EventLog:
        log = self.open_log()
        self._opened.append(log)
        return log

    def test_messages_of_a_key_keep_their_order_across_partitions(self):
        log = self.log()
        keys = [f"urn:li:tag:t{i}" for i in range(8)]
        for round_ in range(3):
            log.append(TOPIC, messages(*[(key, f"{key}#{round_}") for key in keys]))
        consumer = log.consumer("g", [TOPIC])
        records = poll_until(consumer, 24)
        assert {r.topic for r in records} == {TOPIC}
        for record in records:
            assert record.partition == partition_for(record.key, self.PARTITIONS)
        for key in keys:
            assert [r.value.decode() for r in records if r.key == key] == [f"{key}#{i}" for i in range(3)]
        for part in range(self.PARTITIONS):
            offsets = [r.offset for r in records if r.partition == part]
            assert offsets == sorted(set(offsets))
        consumer.close()

    def test_partitions_are_the_configured_count(self):
        assert self.log().partitions(TOPIC) == self.PARTITIONS

    def test_committed_offsets_survive_a_restart_and_uncommitted_records_are_read_again(self):
        log = self.log()
        log.append(TOPIC, messages(("a", "1"), ("a", "2"), ("a", "3")))
        consumer = log.consumer("g", [TOPIC])
        first = poll_until(consumer, 2)
        consumer.commit(first[:1])
        consumer.close()
        log.close()
        reopened = self.log()
        again = reopened.consumer("g", [TOPIC])
        assert values(poll_until(again, 2)) == [b"2", b"3"]
        assert reopened.committed("g", TOPIC, first[0].partition) == first[0].offset + 1
        again.close()

    def test_consumers_of_different_groups_each_see_everything(self):
        log = self.log()
        log.append(TOPIC, messages(*[(f"k{i}", str(i)) for i in range(10)]))
        one, other = log.consumer("one", [TOPIC]), log.consumer("other", [TOPIC])
        seen_by_one = poll_until(one, 10)
        one.commit(seen_by_one)
        assert sorted(values(seen_by_one)) == sorted(values(poll_until(other, 10)))
        one.close()
        other.close()

    def test_closing_a_consumer_again_does_nothing(self):
        log = self.log()
        log.append(TOPIC, messages(*[(f"k{i}", str(i)) for i in range(10)]))
        consumer = log.consumer("g", [TOPIC])
        consumer.commit(poll_until(consumer, 10))
        consumer.close()
        consumer.close()
        assert sum(log.committed("g", TOPIC, part) for part in range(self.PARTITIONS)) == 10

    def test_poll_waits_for_an_append_and_returns_it_promptly(self):
        log = self.log()
        consumer = log.consumer("g", [TOPIC])
        assert consumer.poll(10, timeout=0) == []
        timer = threading.Timer(0.05, lambda: log.append(TOPIC, messages(("k", "late"))))
        timer.start()
        started = time.monotonic()
        assert values(consumer.poll(10, timeout=WAIT)) == [b"late"]
        assert time.monotonic() - started < WAIT / 2  # returned on arrival, not at the timeout
        timer.join()
        consumer.close()

    def test_read_from_an_offset_without_a_group(self):
        log = self.log()
        log.append(TOPIC, messages(*[("k", str(i)) for i in range(5)]))
        part = partition_for("k", self.PARTITIONS)
        records = log.read(TOPIC, part)
        assert values(records) == [str(i).encode() for i in range(5)]
        assert log.read(TOPIC, part, records[2].offset, limit=2) == records[2:4]
        assert log.read(TOPIC, part, records[-1].offset + 1) == []
        assert log.read(TOPIC, (part + 1) % self.PARTITIONS) == []

    def test_a_group_that_committed_the_end_offset_has_processed_everything(self):
        log = self.log()
        part = partition_for("k", self.PARTITIONS)
        assert log.end_offset(TOPIC, part) == 0
        log.append(TOPIC, messages(("k", "1"), ("k", "2")))
        log.append(TOPIC, [LogMessage("k", b"3", 1)], producer="store-a")  # transactional on Kafka: a marker follows
        records = log.read(TOPIC, part)
        assert log.end_offset(TOPIC, part) == records[-1].offset + 1
        consumer = log.consumer("g", [TOPIC])
        consumer.commit(poll_until(consumer, 3))
        assert log.committed("g", TOPIC, part) == log.end_offset(TOPIC, part)
        assert log.committed("never", TOPIC, part) == 0
        consumer.close()

    def test_the_end_bound_is_the_end_offset_or_past_it_by_no_more_than_a_marker_per_transaction(self):
        log = self.log()
        part = partition_for("k", self.PARTITIONS)
        assert log.end_bound(TOPIC, part) == 0
        log.append(TOPIC, messages(("k", "1")))
        assert log.end_bound(TOPIC, part) == log.end_offset(TOPIC, part) == 1
        for sequence in (1, 2):  # two transactions on Kafka, each followed by its marker
            log.append(TOPIC, [LogMessage("k", str(sequence).encode(), sequence)], producer="store-a")
        assert log.end_offset(TOPIC, part) == log.read(TOPIC, part)[-1].offset + 1
        assert log.end_offset(TOPIC, part) <= log.end_bound(TOPIC, part) <= log.end_offset(TOPIC, part) + 2

    def test_start_positions_times_and_retention(self):
        log = self.log()
        part = partition_for("k", self.PARTITIONS)
        log.append(TOPIC, messages(("k", "a"), ("k", "b")))
        time.sleep(0.05)  # the log's clock moves on between the appends
        boundary = int(time.time() * 1000)
        time.sleep(0.05)
        log.append(TOPIC, messages(("k", "c"), ("k", "d")))
        assert log.offset_for_time(TOPIC, part, boundary) == 2
        assert log.offset_for_time(TOPIC, part, 0) == 0
        assert log.offset_for_time(TOPIC, part, boundary + 3_600_000) == log.end_offset(TOPIC, part) == 4
        assert log.first_offset(TOPIC, part) == 0
        consumer = log.consumer("g", [TOPIC], start={(TOPIC, part): 3})
        assert values(poll_until(consumer, 1)) == [b"d"]
        consumer.close()
        log.delete_before(TOPIC, part, 2)  # as retention would
        assert log.first_offset(TOPIC, part) == 2 and log.end_offset(TOPIC, part) == 4
        assert values(log.read(TOPIC, part, 0)) == [b"c", b"d"]
        log.append(TOPIC, messages(("k", "e")))
        assert [r.offset for r in log.read(TOPIC, part, 0)] == [2, 3, 4]

    def test_a_producer_resending_after_a_crash_adds_nothing_twice(self):
        batch = [LogMessage("k", b"v1", 1), LogMessage("k", b"v2", 2)]
        before_crash = self.log()
        before_crash.append(TOPIC, batch, producer="store-a")
        after_restart = self.log()  # same producer id, no memory of what was sent
        after_restart.append(TOPIC, [*batch, LogMessage("k", b"v3", 3)], producer="store-a")
        after_restart.append(TOPIC, [LogMessage("k", b"other", 1)], producer="store-b")
        before_crash.append(TOPIC, [LogMessage("k", b"v3", 3), LogMessage("k", b"v4", 4)], producer="store-a")
        assert values(after_restart.read(TOPIC, partition_for("k", self.PARTITIONS))) == [
            b"v1", b"v2", b"v3", b"other", b"v4"]
