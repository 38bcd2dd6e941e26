"""A member of a Kafka consumer group, for the Kafka event log (see ingest.eventlog.kafka).

Classic group protocol with cooperative-sticky assignment; auto commit off, read_committed,
`auto.offset.reset=earliest` (a new group starts at the beginning). commit() commits
offset + 1 per partition synchronously, for the partitions this member still holds: records of
a revoked partition are read again by its new owner from the last commit, so a rebalance
loses nothing (at least once).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer as KafkaClientConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from ingest.eventlog import Consumer, EventLogError, LogRecord

log = logging.getLogger(__name__)
_REBALANCED = {KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID,
               KafkaError._ASSIGNMENT_LOST, KafkaError.FENCED_INSTANCE_ID}


class KafkaConsumer(Consumer):
    """A member of the Kafka group `group_id`, subscribed to `topics` (Kafka name -> logical name);
    `client_config` carries the bootstrap address and client-wide settings."""

    def __init__(self, client_config: Mapping[str, object], group_id: str, topics: Mapping[str, str],
                 session_timeout_ms: int = 45_000):
        self.group = group_id
        self._where = f"Kafka at {client_config['bootstrap.servers']}"
        self._topics = dict(topics)
        self._names = {logical: name for name, logical in self._topics.items()}
        self._client = KafkaClientConsumer({
            **client_config, "group.id": group_id, "enable.auto.commit": False, "enable.auto.offset.store": False,
            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": max(100, min(3000, session_timeout_ms // 10))})
        self._client.subscribe(list(self._topics))

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        # consume(n, t) waits for all n or the whole timeout, so wait for one, then take what is here.
        messages = self._client.consume(max_records, 0)
        if not messages and timeout > 0:
            messages = self._client.consume(1, timeout)
            if messages and max_records > 1:
                messages += self._client.consume(max_records - 1, 0)
        records = []
        for message in messages:
            err = message.error()
            if err is None:
                records.append(record_of(self._topics[message.topic()], message))
            elif err.fatal():
                raise EventLogError(f"{self._where}: consumer of group {self.group}: {err}")
            else:
                log.warning("consumer of group %s: %s", self.group, err)
        return records

    def commit(self, records: Iterable[LogRecord]) -> None:
        positions: dict[tuple[str, int], int] = {}
        for record in records:
            key = (self._names[record.topic], record.partition)
            positions[key] = max(positions.get(key, 0), record.offset + 1)
        assigned = {(tp.topic, tp.partition) for tp in self._client.assignment()}
        offsets = [TopicPartition(name, part, offset) for (name, part), offset in positions.items()
                   if (name, part) in assigned]
        if len(offsets) < len(positions):
            log.info("group %s: not committing revoked partitions %s; their new owner reads them again",
                     self.group, sorted(set(positions) - assigned))
        if not offsets:
            return
        try:
            results = self._client.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            errors = [exc.args[0]]
        else:
            errors = [tp.error for tp in results if tp.error is not None]
        if any(err.code() not in _REBALANCED for err in errors):
            raise EventLogError(f"{self._where}: commit of group {self.group} failed: {errors}")
        if errors:
            log.info("group %s: commit lost to a rebalance (%s); the records will be read again",
                     self.group, errors[0])

    def assignment(self) -> set[tuple[str, int]]:
        """The (topic, partition) pairs this member holds now."""
        return {(self._topics[tp.topic], tp.partition) for tp in self._client.assignment()}

    def close(self) -> None:
        """Leave the group; records not committed go to the remaining members."""
        self._client.close()


def record_of(topic: str, message: Message) -> LogRecord:
    """The LogRecord of a consumed message of the logical topic `topic`."""
    key = message.key()
    return LogRecord(topic, message.partition(), message.offset(), key.decode() if key else "",
                     message.value() or b"", message.timestamp()[1])
