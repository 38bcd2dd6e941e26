"""The event-log contract every adapter passes (EventLogContract, one subclass per adapter that
only says how to open it), Kafka's consumer groups, and the Avro single-object encoding of events."""

from __future__ import annotations

import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException, Producer

from ingest.eventlog import Consumer, EventLog, EventLogError, LogMessage, LogRecord, partition_for
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.kafka_consumer import CLOSE_TIMEOUT, KafkaConsumer
from ingest.eventlog.sqlite import SqliteEventLog
from schemas.events import MCL, EventCodec, EventDecodeError, default_codec
from tests.backends import drop_kafka_names, unique_name

TOPIC = "MetadataChangeLog_Versioned_v1"
OTHER_TOPIC = "MetadataChangeLog_Timeseries_v1"
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


class TestSqliteEventLog(EventLogContract):
    @pytest.fixture(autouse=True)
    def _storage(self, tmp_path):
        self.path = tmp_path / "log.db"

    def open_log(self) -> EventLog:
        return SqliteEventLog(self.path, partitions=self.PARTITIONS)

    def test_committing_offsets_never_waits_for_a_writer_of_the_topics(self):
        log = self.open_log()
        log.append("t", [LogMessage("k", b"v")])
        writer = sqlite3.connect(self.path)
        writer.execute("BEGIN IMMEDIATE")  # a GMS applying a batch holds the topics' write lock
        committing = threading.Thread(target=log.commit, args=("g", {("t", 0): 1}))
        committing.start()
        committing.join(10)  # it would wait out the lock's busy timeout (30 s), then fail
        alive = committing.is_alive()
        writer.execute("ROLLBACK")
        committing.join()
        assert not alive
        assert log.committed("g", "t", 0) == 1
        log.close()

    def test_offsets_kept_with_the_topics_move_to_their_own_database(self):
        old = sqlite3.connect(self.path)
        old.executescript("CREATE TABLE group_offsets (grp TEXT NOT NULL, topic TEXT NOT NULL,"
                          " part INTEGER NOT NULL, next_offset INTEGER NOT NULL, PRIMARY KEY (grp, topic, part))"
                          " WITHOUT ROWID; INSERT INTO group_offsets VALUES ('g', 't', 0, 7);")
        old.close()
        log = self.open_log()
        assert log.committed("g", "t", 0) == 7
        log.commit("g", {("t", 0): 9})
        log.close()
        reopened = self.open_log()
        assert reopened.committed("g", "t", 0) == 9
        tables = {row[0] for row in sqlite3.connect(self.path).execute("SELECT name FROM sqlite_master")}
        assert "group_offsets" not in tables
        reopened.close()


class TestKafkaEventLog(EventLogContract):
    @pytest.fixture(autouse=True)
    def _storage(self, kafka_bootstrap: str) -> Iterator[None]:
        self.bootstrap, self.prefix = kafka_bootstrap, unique_name("eventlog") + "-"
        yield
        drop_kafka_names(kafka_bootstrap, self.prefix)

    def open_log(self) -> KafkaEventLog:
        return KafkaEventLog(self.bootstrap, self.prefix, partitions=self.PARTITIONS, session_timeout_ms=6000,
                             timeout=WAIT)

    def _two_members(self, log: KafkaEventLog, topics: tuple[str, ...] = (TOPIC,)
                     ) -> tuple[KafkaConsumer, KafkaConsumer]:
        """Two members of group "g" once they split the partitions of every topic between them
        (each topic's share settles on its own: one may still be held whole by one member)."""
        first, second = log.consumer("g", topics), log.consumer("g", topics)
        deadline = time.monotonic() + WAIT
        everything = {(topic, part) for topic in topics for part in range(self.PARTITIONS)}

        def settled() -> bool:
            held = [{topic for topic, _ in member.assignment()} for member in (first, second)]
            return (first.assignment() | second.assignment() == everything
                    and not first.assignment() & second.assignment() and held[0] == held[1] == set(topics))

        while not settled():
            assert time.monotonic() < deadline, "the group did not settle"
            assert first.poll(10, 0.05) == [] and second.poll(10, 0.05) == []
        return first, second

    def test_members_of_one_group_split_the_partitions_and_see_every_record_once(self):
        log = self.log()
        first, second = self._two_members(log)
        log.append(TOPIC, messages(*[(f"urn:li:tag:t{i}", str(i)) for i in range(40)]))
        seen: dict[KafkaConsumer, list[LogRecord]] = {first: [], second: []}
        deadline = time.monotonic() + WAIT
        while sum(len(records) for records in seen.values()) < 40:
            assert time.monotonic() < deadline
            for member, records in seen.items():
                batch = member.poll(100, 0.05)
                member.commit(batch)
                records += batch
        everything = [record.value for records in seen.values() for record in records]
        assert sorted(everything) == sorted(str(i).encode() for i in range(40))
        for member, records in seen.items():
            assert records and {(r.topic, r.partition) for r in records} <= member.assignment()
        first.close()
        second.close()

    def test_members_of_a_group_on_two_topics_split_each_topic(self):
        """Not topic by topic (as an assignor balancing partition counts over a member's whole
        subscription may do): two MCL processors must share the versioned MCLs."""
        log = self.log()
        topics = (TOPIC, OTHER_TOPIC)
        first, second = self._two_members(log, topics)  # each with partitions of both topics
        for topic in topics:
            log.append(topic, messages(*[(f"urn:li:tag:t{i}", f"{topic} {i}") for i in range(40)]))
        seen: list[LogRecord] = []
        deadline = time.monotonic() + WAIT
        while len(seen) < 80:
            assert time.monotonic() < deadline, f"{len(seen)} of 80 records"
            for member in first, second:
                batch = member.poll(100, 0.05)
                assert {(r.topic, r.partition) for r in batch} <= member.assignment()
                member.commit(batch)
                seen += batch
        assert sorted(values(seen)) == sorted(f"{t} {i}".encode() for t in topics for i in range(40))
        assert all(log.committed("g", topic, part) == log.end_offset(topic, part)
                   for topic in topics for part in range(self.PARTITIONS))
        first.close()
        second.close()

    def test_a_member_leaving_midway_has_its_uncommitted_records_read_by_the_other(self):
        log = self.log()
        stays, leaves = self._two_members(log)
        log.append(TOPIC, messages(*[(f"urn:li:tag:t{i}", str(i)) for i in range(40)]))
        leaving_parts = {part for _, part in leaves.assignment()}
        expected = sum(partition_for(f"urn:li:tag:t{i}", self.PARTITIONS) in leaving_parts for i in range(40))
        taken = poll_until(leaves, expected)
        leaves.commit(taken[:len(taken) // 2])
        committed_up_to: dict[int, int] = {}
        for record in taken[:len(taken) // 2]:
            committed_up_to[record.partition] = max(committed_up_to.get(record.partition, 0), record.offset + 1)
        leaves.close()
        uncommitted = {(r.partition, r.offset) for r in taken if r.offset >= committed_up_to.get(r.partition, 0)}
        seen: list[LogRecord] = []
        deadline = time.monotonic() + WAIT
        while len(seen) < 40 - (len(taken) - len(uncommitted)):
            assert time.monotonic() < deadline, f"{len(seen)} records"
            batch = stays.poll(100, 0.1)
            stays.commit(batch)
            seen += batch
        assert uncommitted and uncommitted <= {(r.partition, r.offset) for r in seen}
        assert len(seen) == len({(r.partition, r.offset) for r in seen})  # and nothing else twice
        assert stays.assignment() == {(TOPIC, part) for part in range(self.PARTITIONS)}
        stays.close()

    def test_a_member_closing_while_its_group_rebalances_closes_in_time_and_hands_over_everything(self, caplog):
        """librdkafka's close alone can hang on a rebalance reaching the member meanwhile; here
        one comes from a third member joining, and from the closing consumer's own member of the
        other topic leaving just before."""
        log = self.log()
        topics = (TOPIC, OTHER_TOPIC)
        stays, leaves = self._two_members(log, topics)
        joining = log.consumer("g", topics)
        joining.poll(10, 0)  # joins: the group rebalances while `leaves` closes
        started = time.monotonic()
        leaves.close()
        assert time.monotonic() - started < CLOSE_TIMEOUT
        assert "did not close" not in caplog.text
        everything = {(topic, part) for topic in topics for part in range(self.PARTITIONS)}
        deadline = time.monotonic() + WAIT
        while stays.assignment() | joining.assignment() != everything:
            assert time.monotonic() < deadline, (stays.assignment(), joining.assignment())
            assert stays.poll(10, 0.05) == [] and joining.poll(10, 0.05) == []
        stays.close()
        joining.close()

    def test_a_transaction_left_open_by_a_crash_is_aborted_and_its_messages_sent_once(self):
        log = self.log()
        log.append(TOPIC, [LogMessage("k", b"v1", 1)], producer="store-a")
        crashed = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": log.transactional_id("store-a")})
        crashed.init_transactions(WAIT)  # fences `log`'s producer, as a restarted process would
        crashed.begin_transaction()
        crashed.produce(log.topic_name(TOPIC), b"v2", b"k", partition_for("k", self.PARTITIONS))
        assert crashed.flush(WAIT) == 0  # on the broker, never committed
        restarted = self.log()
        restarted.append(TOPIC, [LogMessage("k", b"v1", 1), LogMessage("k", b"v2", 2)], producer="store-a")
        log.append(TOPIC, [LogMessage("k", b"v2", 2), LogMessage("k", b"v3", 3)], producer="store-a")
        assert values(restarted.read(TOPIC, partition_for("k", self.PARTITIONS))) == [b"v1", b"v2", b"v3"]
        with pytest.raises(KafkaException, match="fenced"):  # a zombie cannot commit it later
            crashed.commit_transaction(WAIT)

    def test_an_unreachable_broker_is_reported_with_its_address_in_bounded_time(self):
        started = time.monotonic()
        with pytest.raises(EventLogError, match="127.0.0.1:9"):
            KafkaEventLog("127.0.0.1:9", connect_timeout=1)
        assert time.monotonic() - started < 5


def test_events_round_trip_through_avro_single_object_encoding():
    codec = default_codec()
    record = {
        "entityType": "dataset", "entityUrn": "urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
        "changeType": "UPSERT", "aspectName": "status",
        "aspect": {"value": b'{"removed":false}', "contentType": "application/json"},
        "systemMetadata": {"lastObserved": 5, "runId": "r", "version": "2", "properties": {"a": "b"},
                           "aspectCreated": {"time": 1, "actor": "urn:li:corpuser:x"}},
        "headers": {"If-Version-Match": "1"}, "previousAspectValue": None,
        "previousSystemMetadata": {"lastObserved": 4, "runId": "r0", "version": "1"},
        "created": {"time": 7, "actor": "urn:li:corpuser:x"},
    }
    data = codec.encode(MCL, record)
    assert data[:2] == b"\xc3\x01"
    type_name, decoded = codec.decode(data)
    assert type_name == MCL
    assert decoded["aspect"] == record["aspect"]
    assert decoded["systemMetadata"]["properties"] == {"a": "b"}
    assert decoded["systemMetadata"]["aspectCreated"]["actor"] == "urn:li:corpuser:x"
    assert decoded["previousSystemMetadata"]["version"] == "1"
    assert decoded["headers"] == {"If-Version-Match": "1"}
    assert decoded["entityKeyAspect"] is None and decoded["previousAspectValue"] is None


def test_compiled_encoder_writes_what_fastavro_writes():
    import io

    from fastavro import schemaless_writer

    codec = EventCodec()
    record = {"entityType": "tag", "entityUrn": "urn:li:tag:pii", "changeType": "DELETE", "aspectName": "tagKey",
              "aspect": None, "systemMetadata": {"lastObserved": 123456789012, "runId": "x" * 100},
              "created": {"time": -5, "actor": "a", "message": "m"}}
    ours = codec.encode(MCL, record)
    theirs = io.BytesIO()
    schemaless_writer(theirs, codec._current[MCL].schema, record)
    assert ours[10:] == theirs.getvalue()


@pytest.mark.parametrize(("data", "message"), [
    (b"{}", "missing C3 01 marker"),
    (b"\xc3\x01" + b"\x00" * 8 + b"x", "unknown writer schema fingerprint"),
])
def test_undecodable_events_are_reported(data, message):
    with pytest.raises(EventDecodeError, match=message):
        default_codec().decode(data)


def test_truncated_event_body_is_reported():
    data = default_codec().encode(MCL, {"entityType": "tag", "entityUrn": "urn:li:tag:x", "changeType": "UPSERT"})
    with pytest.raises(EventDecodeError, match="corrupt"):
        default_codec().decode(data[:12])
