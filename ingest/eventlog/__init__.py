"""The event-log port: durable, per-partition ordered topics keyed by URN, with consumer groups.

Shaped after Kafka so the Kafka adapter fits: a message's key picks its partition, so all
messages of one URN keep their order; consumers in a group commit the next offset to read
per partition, and a restarted consumer resumes there. Every adapter places a key in the
same partition (partition_for) and applies the same idempotence rule (unseen), and raises its
backend's errors as `ingest.backends.errors` (BackendUnavailable while the log does not answer).
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogMessage:
    """A message to append. `sequence` numbers the messages of one producer (see append)."""

    key: str
    value: bytes
    sequence: int | None = None


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A message read back, with its position."""

    topic: str
    partition: int
    offset: int
    key: str
    value: bytes
    timestamp_ms: int


def partition_for(key: str, partitions: int) -> int:
    """The partition of a key: stable across processes and runs, and the same in every adapter.

    CRC-32 of the UTF-8 key modulo the partition count: librdkafka's `consistent` partitioner
    (not the Java client's murmur2 default)."""
    return 0 if partitions == 1 else zlib.crc32(key.encode()) % partitions


def unseen(messages: Sequence[LogMessage], last_sequence: int | None) -> tuple[list[LogMessage], int | None]:
    """The idempotence rule of append: the messages whose sequence is above the producer's last
    stored one (None: nothing stored yet; messages without a sequence always pass), and the
    producer's new last sequence (None when no passing message has one)."""
    fresh = [m for m in messages if m.sequence is None or last_sequence is None or m.sequence > last_sequence]
    newest = max((m.sequence for m in fresh if m.sequence is not None), default=None)
    return fresh, newest


class Consumer(ABC):
    """Reads topics as one member of a consumer group."""

    @abstractmethod
    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        """Up to max_records records after the consumer's position, waiting up to timeout
        seconds when there are none."""

    @abstractmethod
    def commit(self, records: Iterable[LogRecord]) -> None:
        """Mark records (and everything before them in their partitions) as processed."""

    @abstractmethod
    def close(self) -> None:
        """Leave the group (what was not committed is read again by its next reader); closing
        again does nothing."""


class EventLog(ABC):
    """Appends to and reads from topics."""

    @abstractmethod
    def append(self, topic: str, messages: Sequence[LogMessage], producer: str | None = None) -> None:
        """Append durably, in order; returns once the messages are stored.

        With a producer id, messages carry increasing sequence numbers and the log drops
        any whose sequence is not above the last it stored for that producer (Kafka's
        idempotent-producer model), so re-sending after a crash adds nothing twice."""

    def release_producer(self, producer: str) -> None:  # noqa: B027 (nothing to release is a valid answer)
        """Drop what this log keeps for appending as `producer` (e.g. a producer whose outbox
        was taken over); a later append as it starts afresh. Default: nothing kept."""

    @abstractmethod
    def consumer(self, group: str, topics: Sequence[str], start: Mapping[tuple[str, int], int] | None = None
                 ) -> Consumer:
        """A consumer in `group`, starting at the group's committed offsets (else the start);
        `start` maps (topic, partition) to the offset to read first there instead."""

    @abstractmethod
    def read(self, topic: str, partition: int = 0, offset: int = 0, limit: int = 1000) -> list[LogRecord]:
        """Records of one partition from an offset, without a consumer group."""

    @abstractmethod
    def partitions(self, topic: str) -> int: ...

    @abstractmethod
    def committed(self, group: str, topic: str, partition: int) -> int:
        """The next offset `group` will read in a partition (0 when it committed none)."""

    @abstractmethod
    def end_offset(self, topic: str, partition: int) -> int:
        """The offset after the last record of a partition readable now (0 when it has none): a
        group that committed this offset has processed every record appended so far."""

    def end_bound(self, topic: str, partition: int) -> int:
        """`end_offset`, or a little past it where the log keeps records of its own after the
        last one readable (Kafka's transaction markers), asked more cheaply: for estimates such as
        a group's lag, never for waiting on a group."""
        return self.end_offset(topic, partition)

    @abstractmethod
    def first_offset(self, topic: str, partition: int) -> int:
        """The offset of the oldest record a partition still holds (retention drops older ones;
        end_offset when it holds none)."""

    @abstractmethod
    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int:
        """The offset of the first record of a partition appended at or after timestamp_ms
        (end_offset when there is none)."""

    @abstractmethod
    def delete_before(self, topic: str, partition: int, offset: int) -> None:
        """Drop a partition's records before `offset`, as retention does; offsets are never reused."""

    @abstractmethod
    def ping(self, timeout: float) -> None:
        """Raise BackendUnavailable unless the log's servers answer within timeout seconds."""

    @abstractmethod
    def close(self) -> None: ...
