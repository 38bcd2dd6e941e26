"""The event-log contract every adapter passes (EventLogContract, one subclass per adapter that
only says how to open it), Kafka's consumer groups, and the Avro single-object encoding of events."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from ingest.backends.errors import BackendUnavailable
from ingest.eventlog import EventLog, LogMessage, LogRecord, partition_for
from ingest.eventlog import kafka as kafka_log
from ingest.eventlog.kafka import KafkaEventLog
from ingest.eventlog.kafka_consumer import CLOSE_TIMEOUT, KafkaConsumer
from ingest.eventlog.sqlite import SqliteEventLog
from schemas.events import MCL, EventCodec, EventDecodeError, default_codec
from tests.contracts.event_log import TOPIC, WAIT, EventLogContract, messages, poll_until, values
from tests.support.backends import drop_kafka_names, unique_name

OTHER_TOPIC = "MetadataChangeLog_Timeseries_v1"


def _librdkafka_threads() -> int:
    """How many threads of this process librdkafka runs (named rdk:main, rdk:broker..., rdk:bg)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                count += comm.read().startswith("rdk:")
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return count


class _Altered:
    """A real Kafka client, but for the method a subclass alters to put it in a state a test
    cannot bring about on demand."""

    def __init__(self, client: Consumer):
        self.client = client

    def __getattr__(self, name: str) -> object:
        return getattr(self.client, name)


class _FetchesNothing(_Altered):
    """A reader client that never fetches what it is assigned (its partitions are paused), as a
    client assigned partitions before a broker restart may (confluentinc/librdkafka#5153)."""

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.client.assign(partitions)
        self.client.pause(partitions)


class _KnowsNoLeader(_Altered):
    """A lookups client that answers every watermark request as one whose metadata lost the
    partition's leader, as one that met the broker while it was coming back did."""

    def get_watermark_offsets(self, *_: object) -> tuple[int, int]:
        raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))


class _AlterableClients(KafkaEventLog):
    """A Kafka log whose reader stops fetching, or whose lookups client loses the partitions'
    leaders, when told; `readers`, `lookups`: the clients of each kind it made."""

    readers = lookups = 0

    def _new_reader(self) -> Consumer:
        self.readers += 1
        return super()._new_reader()

    def _new_lookups(self) -> Consumer:
        self.lookups += 1
        return super()._new_lookups()

    def stall_reader(self) -> None:
        self._reader = _FetchesNothing(self._reader)  # type: ignore[assignment]

    def lose_the_leader(self) -> None:
        self._lookups = _KnowsNoLeader(self._lookups)  # type: ignore[assignment]


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

    def test_a_closed_log_holds_no_kafka_client_even_while_still_referenced(self):
        gc.collect()  # other tests' clients that are garbage already
        before = _librdkafka_threads()
        log = self.log()  # the contract keeps a reference until the test ends
        consumer = log.consumer("g", (TOPIC,))
        log.append(TOPIC, [LogMessage("k", b"v")])
        assert _librdkafka_threads() > before
        consumer.close()
        log.close()
        assert _librdkafka_threads() <= before
        log.close()  # closing again does nothing

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

    def test_a_commit_made_while_the_group_rebalances_lands_before_the_member_leaves(self):
        """As when a subscription's member of one topic commits while its member of the other
        topic joins, then closes at once: the broker may refuse the commit until the rebalance
        is over, and closing must send it before leaving (a member that left cannot commit)."""
        log = self.log()
        log.append(TOPIC, messages(*[(f"urn:li:tag:t{i}", str(i)) for i in range(12)]))
        leaves = log.consumer("g", (TOPIC,))
        taken = poll_until(leaves, 12)
        joining = log.consumer("g", (OTHER_TOPIC,))
        joining.poll(10, 0)
        self._await_group_state(log, "g", ConsumerGroupState.PREPARING_REBALANCING)
        leaves.commit(taken)
        stop = threading.Event()

        def serve_the_rebalance() -> None:
            while not stop.is_set():
                joining.poll(10, 0.05)

        serving = threading.Thread(target=serve_the_rebalance)
        serving.start()
        try:
            leaves.close()
        finally:
            stop.set()
            serving.join()
        ends = {part: log.end_offset(TOPIC, part) for part in range(self.PARTITIONS)}
        assert {part: log.committed("g", TOPIC, part) for part in ends} == ends
        joining.close()

    def _await_group_state(self, log: KafkaEventLog, group: str, state: ConsumerGroupState) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + WAIT
        while True:
            (future,) = admin.describe_consumer_groups([log.group_name(group)]).values()
            now = future.result().state
            if now == state:
                return
            assert time.monotonic() < deadline, f"group {group} is {now}, not {state}"
            time.sleep(0.05)

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

    def test_a_read_whose_client_fetches_nothing_goes_on_with_a_new_one_and_appends_never_wait_for_it(
            self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
        monkeypatch.setattr(kafka_log, "STALLED_READ", 8.0)
        log = _AlterableClients(self.bootstrap, self.prefix, partitions=self.PARTITIONS, timeout=WAIT)
        try:
            partition = partition_for("k", self.PARTITIONS)
            log.append(TOPIC, [LogMessage("k", b"v1", 1), LogMessage("k", b"v2", 2)], producer="p")
            log.stall_reader()
            read: list[list[LogRecord]] = []
            reading = threading.Thread(target=lambda: read.append(log.read(TOPIC, partition)))
            reading.start()
            # While the read waits on its stalled client, an append goes through: it asks the
            # partition's end of a client of its own, not of the reader.
            log.append(TOPIC, [LogMessage("k", b"v3", 3)], producer="p")
            assert reading.is_alive(), "the read ended before the append: nothing was checked"
            reading.join(WAIT)
            assert values(read[0]) == [b"v1", b"v2"]  # to the end when the read began, from a new client
            assert log.readers == 2
            assert "nothing came for 8s; reading on with a new client" in caplog.text
            assert values(log.read(TOPIC, partition)) == [b"v1", b"v2", b"v3"] and log.readers == 2
        finally:
            log.close()

    def test_a_lookups_client_that_does_not_know_the_leader_is_replaced(self):
        log = _AlterableClients(self.bootstrap, self.prefix, partitions=self.PARTITIONS, timeout=WAIT)
        try:
            partition = partition_for("k", self.PARTITIONS)
            log.append(TOPIC, [LogMessage("k", b"v1", 1)], producer="p")
            log.lose_the_leader()
            log.append(TOPIC, [LogMessage("k", b"v2", 2)], producer="p")  # awaits its markers: asks the end
            assert log.lookups == 2
            assert values(log.read(TOPIC, partition)) == [b"v1", b"v2"]
            assert log.end_bound(TOPIC, partition) >= log.end_offset(TOPIC, partition) == 3
        finally:
            log.close()

    def test_an_unreachable_broker_is_reported_with_its_address_in_bounded_time(self):
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match="127.0.0.1:9"):
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
