"""The event log on Apache Kafka (confluent-kafka, i.e. librdkafka).

Topics. The logical topic `T` is the Kafka topic `prefix + T`, created on first use with the
AdminClient: `partitions` partitions and the retention of RETENTION_MS. An existing topic is
used as it is (its partition count is read from the metadata).

Placement. append computes `partition_for(key, n)` itself and produces to that partition, so
both adapters put a key in the same partition; that is librdkafka's `consistent` partitioner,
not the Java client's murmur2 (a Java producer writing these topics must choose the partition
the same way). One partition is written in append order by an idempotent producer (acks=all),
so the messages of one key keep their order.

Idempotent appends with a producer id. Kafka's idempotent producer only drops duplicates
within one producer session; the port's rule (drop a message whose sequence is not above the
last one stored for its producer) must hold across process crashes, so it is kept here:

* each producer id has a transactional producer, `transactional.id = prefix + "producer." + id`;
* its first use in a process calls init_transactions(), which fences any older instance with
  that id (a crashed or stalled process) and aborts the transaction it left open; then the
  compacted topic SEQUENCES (key: producer id, value: last sequence) is read, read_committed,
  to learn the producer's last sequence;
* an append drops the messages that are not above it (`unseen`) and writes the rest together
  with the new last sequence to SEQUENCES in ONE transaction.

A crash before the commit leaves an open transaction: the next instance's init_transactions
aborts it (else the broker does after TRANSACTION_TIMEOUT_MS; until then read_committed
readers of its partitions wait), nobody reading committed data ever sees its messages, and
the re-send writes them. A crash after the commit leaves the sequence record, so the re-send
adds nothing. The cached last sequence cannot go stale unnoticed: another writer under the
same id has a newer epoch, which fences this one; a fenced append starts over (new producer,
init, reload), so two processes publishing one outbox stay correct, though they fence each
other on every append. Appends without a producer id use the shared idempotent producer.

Consumers (kafka_consumer.KafkaConsumer) join group `prefix + group`; read() and the
sequence lookup use a group-less reader (assign) up to the partition's last stable offset.
A reader that gets nothing for STALLED_READ seconds is replaced and the read goes on with the
new one: a client assigned partitions before a broker restart may never fetch again
(confluentinc/librdkafka#5153), while a new client is answered at once. Watermarks and time
lookups are asked of a client of their own, never assigned and used without a lock, so an
append awaiting its commit markers never waits behind a read; that client is replaced too when
it does not know a partition's leader for LOOKUPS_RENEW_AFTER seconds (see _watermarks).

Errors. The constructor checks that the cluster answers within `connect_timeout`; every
Kafka failure is raised as an ingest.backends.errors error naming the bootstrap address
(BackendUnavailable but for the client's authorization, see ingest.backends.kafka), each Kafka
call bounded by `timeout` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer as KafkaClientConsumer
from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ingest import topics
from ingest.backends import Endpoints
from ingest.backends.errors import BackendUnavailable
from ingest.backends.kafka import backend_error
from ingest.eventlog import EventLog, LogMessage, LogRecord, partition_for, unseen
from ingest.eventlog.kafka_consumer import KafkaConsumer, record_of

log = logging.getLogger(__name__)
librdkafka_log = logging.getLogger(__name__ + ".librdkafka")

DAY_MS = 24 * 3600 * 1000
RETENTION_MS = {
    topics.MCP: 7 * DAY_MS,
    topics.FAILED_MCP: 30 * DAY_MS,
    topics.MCL_VERSIONED: 7 * DAY_MS,
    topics.MCL_TIMESERIES: 90 * DAY_MS,
}
DEFAULT_RETENTION_MS = 7 * DAY_MS
SEQUENCES = "LodestarProducerSequences_v1"
SEQUENCES_CONFIG = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": str(3600 * 1000)}
TRANSACTION_TIMEOUT_MS = 60_000
# What an offsets request gets from a client that lost the group's coordinator (a broker down).
_COORDINATOR_LOST = (KafkaError._TIMED_OUT, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE)
SCAN_BATCH = 10_000  # messages a read takes from the client at once
STALLED_READ = 5.0  # seconds a read may get neither a message nor the partition's end before its client is replaced
FIRST_OFFSETS_TIMEOUT = 5.0  # a group's offsets not read within this are asked of a new client
_LEADER_MOVING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                            KafkaError.UNKNOWN_TOPIC_OR_PART,
                            KafkaError._UNKNOWN_PARTITION})  # the client's metadata lacks it (a broker back)
LEADER_RETRY_PAUSE = 0.05  # seconds between askings while the leader is not known
LOOKUPS_RENEW_AFTER = 2.0  # seconds a lookups client may not know a partition's leader before it is replaced


@dataclass
class _TransactionalProducer:
    producer: Producer
    last_sequence: int | None


class KafkaEventLog(EventLog):
    """The event log on a Kafka cluster; topic, group and transactional ids carry `prefix`."""

    def __init__(self, bootstrap: str, prefix: str = "", partitions: int = 4, replication: int = -1,
                 session_timeout_ms: int = 45_000, timeout: float = 30.0, connect_timeout: float = 10.0,
                 min_insync_replicas: int | None = None):
        """`replication` -1 takes the broker's default, `min_insync_replicas` None too (both for the
        topics it creates); `timeout` bounds every Kafka call."""
        self.bootstrap = bootstrap
        self.prefix = prefix
        self.default_partitions = partitions
        self.replication = replication
        self.min_insync_replicas = min_insync_replicas
        self.session_timeout_ms = session_timeout_ms
        self.timeout = timeout
        with self._failing(f"connecting (within {connect_timeout:g}s)"):
            self._admin = AdminClient(self._config())
            self._admin.list_topics(timeout=connect_timeout)
            self._producer = Producer(self._config(**{
                "enable.idempotence": True, "acks": "all", "delivery.timeout.ms": int(timeout * 1000),
                "linger.ms": 5}))
        self._partition_counts: dict[str, int] = {}
        self._topics_lock = threading.Lock()
        self._transactional: dict[str, _TransactionalProducer] = {}
        self._producer_locks: dict[str, threading.Lock] = {}
        self._producers_lock = threading.Lock()
        with self._failing("creating its reader"):
            self._reader = self._new_reader()
            self._lookups = self._new_lookups()
        self._reader_lock = threading.Lock()
        self._offsets_readers: dict[str, KafkaClientConsumer] = {}  # group name -> its offsets reader
        self._offsets_readers_lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_endpoints(cls, endpoints: Endpoints, prefix: str = "", **options: Any) -> KafkaEventLog:
        """The log on `endpoints.kafka_bootstrap` (options as for the constructor)."""
        return cls(endpoints.kafka_bootstrap, prefix, **options)

    def _new_reader(self) -> KafkaClientConsumer:
        """A group-less consumer for reads by assignment, told each partition's end."""
        return self._committed_reader("lodestar-reader", **{"enable.partition.eof": True, "fetch.wait.max.ms": 10})

    def _new_lookups(self) -> KafkaClientConsumer:
        """A consumer never assigned, for watermarks and time lookups."""
        return self._committed_reader("lodestar-lookups")

    def _committed_reader(self, name: str, **extra: object) -> KafkaClientConsumer:
        """A read_committed consumer that never joins its group `prefix + name` nor commits."""
        return KafkaClientConsumer(self._config(**{
            "group.id": f"{self.prefix}{name}", "enable.auto.commit": False, "isolation.level": "read_committed",
            **extra}))

    def _config(self, **extra: object) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap, "allow.auto.create.topics": False,
                "logger": librdkafka_log, **extra}

    @contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        try:
            yield
        except KafkaException as exc:
            raise backend_error(f"Kafka at {self.bootstrap}: {what} failed: {exc.args[0]}", exc.args[0]) from exc

    # names and topics

    def topic_name(self, topic: str) -> str:
        """The Kafka topic of a logical topic."""
        return self.prefix + topic

    def group_name(self, group: str) -> str:
        """The Kafka consumer group of a logical group."""
        return self.prefix + group

    def transactional_id(self, producer: str) -> str:
        """The transactional.id of a producer id (see the module docstring)."""
        return f"{self.prefix}producer.{producer}"

    def partitions(self, topic: str) -> int:
        return self._ensure(topic)

    def _ensure(self, topic: str) -> int:
        """Create the topic unless it exists; its partition count."""
        with self._topics_lock:
            if topic in self._partition_counts:
                return self._partition_counts[topic]
            name = self.topic_name(topic)
            config = dict(SEQUENCES_CONFIG) if topic == SEQUENCES else {
                "retention.ms": str(RETENTION_MS.get(topic, DEFAULT_RETENTION_MS))}
            if self.min_insync_replicas is not None:
                config["min.insync.replicas"] = str(self.min_insync_replicas)
            new = NewTopic(name, 1 if topic == SEQUENCES else self.default_partitions, self.replication,
                           config=config)
            with self._failing(f"creating topic {name}"):
                future = self._admin.create_topics([new], operation_timeout=self.timeout,
                                                   request_timeout=self.timeout)[name]
                try:
                    future.result()
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                        raise
            self._partition_counts[topic] = self._partitions_in_metadata(name)
            return self._partition_counts[topic]

    def _partitions_in_metadata(self, name: str) -> int:
        """The topic's partition count once the broker's metadata has all of them with a leader
        (a topic just created appears there a moment later)."""
        deadline = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            with self._failing(f"reading the metadata of {name}"):
                metadata = self._admin.list_topics(name, timeout=self.timeout).topics[name]
            if metadata.error is None and metadata.partitions and all(
                    part.leader >= 0 for part in metadata.partitions.values()):
                return len(metadata.partitions)
            if time.monotonic() > deadline:
                raise BackendUnavailable(f"Kafka at {self.bootstrap}: topic {name} is not usable: {metadata.error}")
            time.sleep(pause)  # no notification for metadata changes: back off and ask again
            pause = min(pause * 2, 0.2)

    # appends

    def append(self, topic: str, messages: Sequence[LogMessage], producer: str | None = None) -> None:
        if not messages:
            return
        if producer is None:
            self._append_idempotent(topic, messages)
        else:
            self._append_transactional(topic, messages, producer)

    def _produce(self, client: Producer, topic: str, message: LogMessage, partitions: int, **kwargs: object) -> None:
        while True:
            try:
                client.produce(self.topic_name(topic), value=message.value, key=message.key.encode(),
                               partition=partition_for(message.key, partitions), **kwargs)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                client.poll(0.1)

    def _append_idempotent(self, topic: str, messages: Sequence[LogMessage]) -> None:
        partitions = self._ensure(topic)
        errors: list[KafkaError] = []

        def delivered(err: KafkaError | None, _: Message) -> None:
            if err is not None:
                errors.append(err)

        with self._failing(f"appending to {self.topic_name(topic)}"):
            for message in messages:
                self._produce(self._producer, topic, message, partitions, on_delivery=delivered)
        if self._producer.flush(self.timeout) or errors:
            raise backend_error(f"Kafka at {self.bootstrap}: appending to {self.topic_name(topic)} failed: "
                                f"{errors[0] if errors else f'not acknowledged within {self.timeout:g}s'}",
                                errors[0] if errors else None)

    def _append_transactional(self, topic: str, messages: Sequence[LogMessage], producer: str) -> None:
        partitions = self._ensure(topic)
        self._ensure(SEQUENCES)
        with self._producer_lock(producer):
            for attempt in range(3):
                state = self._transactional_producer(producer)
                fresh, newest = unseen(messages, state.last_sequence)
                if not fresh:
                    return
                client = state.producer
                written: dict[int, int] = {}  # partition -> last offset written there

                def delivered(err: KafkaError | None, message: Message, written: dict[int, int] = written) -> None:
                    if err is None:
                        written[message.partition()] = max(written.get(message.partition(), -1), message.offset())

                try:
                    client.begin_transaction()
                    for message in fresh:
                        self._produce(client, topic, message, partitions, on_delivery=delivered)
                    if newest is not None:
                        self._produce(client, SEQUENCES, LogMessage(producer, str(newest).encode()), 1)
                    client.commit_transaction(self.timeout)
                except KafkaException as exc:
                    # Whatever happened, a new producer's init_transactions settles this transaction
                    # and the reload tells what was stored.
                    self._discard(producer)
                    err = exc.args[0]
                    if attempt < 2 and (err.fatal() or err.txn_requires_abort()):
                        log.info("producer %s: %s; starting over", producer, err)
                        continue
                    raise backend_error(f"Kafka at {self.bootstrap}: appending to {self.topic_name(topic)}"
                                        f" as producer {producer} failed: {err}", err) from exc
                if newest is not None:
                    state.last_sequence = newest
                self._await_readable(topic, written)
                return

    def _await_readable(self, topic: str, written: dict[int, int]) -> None:
        """Wait until committed readers see the offsets written: a transaction's commit markers
        reach its partitions after the commit returns, and until then the messages are not
        readable, nor counted by end_offset (so waitForIndex would not wait for them)."""
        name = self.topic_name(topic)
        deadline = time.monotonic() + self.timeout
        with self._failing(f"awaiting the commit markers in {name}"):
            for partition, last in written.items():
                while self._watermarks(name, partition)[1] <= last:
                    if time.monotonic() > deadline:
                        raise BackendUnavailable(f"Kafka at {self.bootstrap}: {name}[{partition}] did not make"
                                                 f" offset {last} readable within {self.timeout:g}s")

    def _producer_lock(self, producer: str) -> threading.Lock:
        with self._producers_lock:
            return self._producer_locks.setdefault(producer, threading.Lock())

    def _transactional_producer(self, producer: str) -> _TransactionalProducer:
        state = self._transactional.get(producer)
        if state is None:
            with self._failing(f"starting producer {producer}"):
                client = Producer(self._config(**{
                    "transactional.id": self.transactional_id(producer), "acks": "all",
                    "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS, "delivery.timeout.ms": int(self.timeout * 1000),
                    "linger.ms": 5}))
                client.init_transactions(self.timeout)  # fences older instances, settles their transaction
            state = self._transactional[producer] = _TransactionalProducer(client, self._last_sequence(producer))
        return state

    def release_producer(self, producer: str) -> None:
        with self._producer_lock(producer):
            self._discard(producer)

    def _discard(self, producer: str) -> None:
        """Close a producer id's producer (aborting its open transaction if it still can)."""
        state = self._transactional.pop(producer, None)
        if state is not None:
            with suppress(KafkaException), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a fenced producer cannot abort: fine
                state.producer.close()

    def _last_sequence(self, producer: str) -> int | None:
        last = None
        for message in self._scan(SEQUENCES, 0, 0, None):
            if message.key() == producer.encode():
                last = int(message.value())
        return last

    # reads

    def read(self, topic: str, partition: int = 0, offset: int = 0, limit: int = 1000) -> list[LogRecord]:
        return [record_of(topic, message) for message in self._scan(topic, partition, offset, limit)]

    def _scan(self, topic: str, partition: int, offset: int, limit: int | None) -> list[Message]:
        """Committed messages of a partition from an offset up to its end when called."""
        self._ensure(topic)
        name = self.topic_name(topic)
        deadline = time.monotonic() + self.timeout
        found: list[Message] = []
        with self._reader_lock, self._failing(f"reading {name}[{partition}]"):
            low, end = self._watermarks(name, partition)
            start = max(offset, low)
            if start >= end or limit == 0:
                return []
            self._reader.assign([TopicPartition(name, partition, start)])
            try:
                while limit is None or len(found) < limit:
                    # the next message (or the end), then what the client holds already, without waiting
                    # (consume waits for a count that offsets of transaction markers may never reach)
                    left = deadline - time.monotonic()
                    first = self._reader.poll(max(0.0, min(left, STALLED_READ)))
                    if first is None:
                        if left <= STALLED_READ:
                            raise BackendUnavailable(f"Kafka at {self.bootstrap}: reading {name}[{partition}]"
                                                     f" took over {self.timeout:g}s")
                        resume_at = found[-1].offset() + 1 if found else start
                        self._replace_reader(TopicPartition(name, partition, resume_at))
                        continue
                    room = (end - start if limit is None else min(limit, end - start)) - len(found)
                    wanted = min(SCAN_BATCH, room) - 1
                    messages = [first, *(self._reader.consume(wanted, 0) if wanted > 0 else ())]
                    for message in messages:
                        if message.error() is not None:
                            if message.error().code() == KafkaError._PARTITION_EOF:
                                return found
                            raise KafkaException(message.error())
                        if message.offset() >= end:
                            return found
                        found.append(message)
                    if found[-1].offset() + 1 >= end:
                        break
            finally:
                self._reader.unassign()
        return found

    def _replace_reader(self, position: TopicPartition) -> None:
        """Read on from `position` with a new reader: the one in use got nothing for STALLED_READ
        seconds (see the module docstring)."""
        log.warning("reading %s[%d] from offset %d: nothing came for %gs; reading on with a new client",
                    position.topic, position.partition, position.offset, STALLED_READ)
        stalled, self._reader = self._reader, self._new_reader()
        stalled.close()
        self._reader.assign([position])

    def end_offset(self, topic: str, partition: int) -> int:
        """After the last committed record: transaction markers take offsets too, so the end of
        the partition may lie beyond it; the tail is read back in growing windows to find it."""
        self._ensure(topic)
        name = self.topic_name(topic)
        with self._failing(f"reading the end of {name}[{partition}]"):
            low, end = self._watermarks(name, partition)
        window = 2
        while end > low:
            start = max(low, end - window)
            tail = self._scan(topic, partition, start, None)
            if tail:
                return tail[-1].offset() + 1
            if start == low:
                break
            window *= 8
        return 0

    def end_bound(self, topic: str, partition: int) -> int:
        """The partition's last stable offset: one watermark request, where `end_offset` also reads
        the tail back to step over the transaction markers (at most one per transaction here)."""
        self._ensure(topic)
        name = self.topic_name(topic)
        with self._failing(f"reading the end of {name}[{partition}]"):
            return self._watermarks(name, partition)[1]

    def _watermarks(self, name: str, partition: int) -> tuple[int, int]:
        """(first offset, end of committed data) of a partition, asked of its leader; a leader
        not known yet (a topic just created, a leader moving, a broker just back) is asked again
        until the timeout. A client told so for LOOKUPS_RENEW_AFTER seconds is replaced: one that
        met the broker while it was coming back may keep its metadata without the partition, as
        nothing it is assigned makes it ask again, while a new client is answered at once."""
        deadline = time.monotonic() + self.timeout
        renew_at = time.monotonic() + LOOKUPS_RENEW_AFTER
        while True:
            try:
                return self._lookups.get_watermark_offsets(TopicPartition(name, partition), self.timeout, False)
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError._TIMED_OUT:
                    # a client that asked a leader which died may go on asking it: the next call
                    # asks with a new one (dropped, not closed, as below)
                    self._lookups = self._new_lookups()
                if exc.args[0].code() not in _LEADER_MOVING or time.monotonic() > deadline:
                    raise
                if time.monotonic() > renew_at:
                    # dropped, not closed: another thread may be asking through it (destroyed after)
                    self._lookups = self._new_lookups()
                    renew_at = time.monotonic() + LOOKUPS_RENEW_AFTER
                time.sleep(LEADER_RETRY_PAUSE)

    def first_offset(self, topic: str, partition: int) -> int:
        self._ensure(topic)
        name = self.topic_name(topic)
        with self._failing(f"reading the start of {name}[{partition}]"):
            low, end = self._watermarks(name, partition)
        return low if low < end else self.end_offset(topic, partition)

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int:
        self._ensure(topic)
        name = self.topic_name(topic)
        with self._failing(f"looking up time {timestamp_ms} in {name}[{partition}]"):
            (found,) = self._lookups.offsets_for_times([TopicPartition(name, partition, timestamp_ms)], self.timeout)
            if found.error is not None:
                raise KafkaException(found.error)
        return found.offset if found.offset >= 0 else self.end_offset(topic, partition)

    def delete_before(self, topic: str, partition: int, offset: int) -> None:
        self._ensure(topic)
        name = self.topic_name(topic)
        with self._failing(f"deleting the records of {name}[{partition}] before offset {offset}"):
            future = self._admin.delete_records([TopicPartition(name, partition, offset)],
                                                request_timeout=self.timeout, operation_timeout=self.timeout)
            future[TopicPartition(name, partition, offset)].result()

    def committed(self, group: str, topic: str, partition: int) -> int:
        """The next offset `group` will read in a partition (0 when it committed none).

        Asked through a consumer of the group that never joins it, not the admin client: an
        admin client's offset request answered "not the coordinator" (a broker restarting, a
        coordinator moving) crashes the whole process in librdkafka (confluentinc/librdkafka#5040:
        it hands the retry to a consumer group the admin client does not have)."""
        name = self.group_name(group)
        partition_ = TopicPartition(self.topic_name(topic), partition)
        with self._failing(f"reading the offsets of group {name}"):
            try:
                return self._committed(name, partition_, min(self.timeout, FIRST_OFFSETS_TIMEOUT))
            except KafkaException as exc:
                if exc.args[0].code() not in _COORDINATOR_LOST:
                    raise
                # A client that lost its broker while the group had members may never hear from
                # the group's coordinator again once the broker is back, or keeps asking the broker
                # that was the coordinator before it died (librdkafka), while a new client is
                # answered at once: ask again with one.
                self._drop_offsets_reader(name)
                return self._committed(name, partition_, self.timeout)

    def _committed(self, group: str, partition: TopicPartition, timeout: float) -> int:
        (result,) = self._offsets_reader(group).committed([partition], timeout)
        if result.error is not None:
            raise KafkaException(result.error)
        return max(result.offset, 0)

    def _offsets_reader(self, group: str) -> KafkaClientConsumer:
        """A consumer of `group` that only reads its offsets (one per group, kept)."""
        with self._offsets_readers_lock:
            reader = self._offsets_readers.get(group)
            if reader is None:
                reader = self._offsets_readers[group] = KafkaClientConsumer(self._config(**{
                    "group.id": group, "enable.auto.commit": False}))
            return reader

    def _drop_offsets_reader(self, group: str) -> None:
        """Forget the group's reader; it is destroyed once no thread is still asking through it."""
        with self._offsets_readers_lock:
            self._offsets_readers.pop(group, None)

    def consumer(self, group: str, topics: Sequence[str], start: Mapping[tuple[str, int], int] | None = None
                 ) -> KafkaConsumer:
        for topic in topics:
            self._ensure(topic)
        with self._failing(f"joining group {self.group_name(group)}"):
            return KafkaConsumer(self._config(), self.group_name(group), {self.topic_name(t): t for t in topics},
                                 self.session_timeout_ms,
                                 {(self.topic_name(t), p): offset for (t, p), offset in (start or {}).items()})

    def ping(self, timeout: float) -> None:
        """A metadata request; fails within timeout when no broker answers."""
        with self._failing(f"asking for the metadata (within {timeout:g}s)"):
            self._admin.list_topics(timeout=timeout)

    def close(self) -> None:
        """Send what is queued (within `timeout`), then let go of every librdkafka client: each
        holds threads and broker connections until it is destroyed, which a log object kept
        referenced after its close (in a list, a cycle) would otherwise delay indefinitely.
        Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._producer.flush(self.timeout)
        for producer in list(self._transactional):
            self._discard(producer)
        self._reader.close()
        self._lookups.close()
        with self._offsets_readers_lock:
            readers, self._offsets_readers = list(self._offsets_readers.values()), {}
        for reader in readers:
            reader.close()
        self._producer.close()
        del self._admin  # AdminClient has no close: dropping the only reference destroys it
