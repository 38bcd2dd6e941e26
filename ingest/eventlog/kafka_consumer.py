"""A member of a Kafka consumer group, for the Kafka event log (see ingest.eventlog.kafka).

Classic group protocol with cooperative-sticky assignment; auto commit off, read_committed,
`auto.offset.reset=earliest` (a new group starts at the beginning). commit() commits
offset + 1 per partition synchronously, for the partitions this member still holds: records of
a revoked partition are read again by its new owner from the last commit, so a rebalance
loses nothing (at least once). A commit the broker refuses because the group is rebalancing is
kept and sent again by the next poll() or commit() for as long as this member holds the
partition without a break: a member that keeps its partitions through a cooperative rebalance
would otherwise never commit records it has processed when no newer ones follow (its group
would lag forever). A partition assigned again starts from the group's commit, so what was kept
for it is dropped then.

A consumer of several topics is one group member per topic (a librdkafka consumer each, in the
same group): the cooperative-sticky assignor balances the partition count of each member over its
whole subscription, so members subscribed to two topics may split them topic by topic (one MCL
processor holding every versioned partition, another every timeseries one); members of one topic
each split that topic. poll() takes from each in turn.

Start positions given to the constructor replace the committed offsets of their partitions the
first time this member is assigned them (a rebalance later resumes from the commits).

Kafka's failures are raised as ingest.backends.errors errors (see ingest.backends.kafka).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import Consumer as KafkaClientConsumer
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from ingest.backends.errors import BackendError
from ingest.backends.kafka import backend_error
from ingest.eventlog import Consumer, LogRecord

log = logging.getLogger(__name__)
_REBALANCED = {KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID,
               KafkaError._ASSIGNMENT_LOST, KafkaError.FENCED_INSTANCE_ID}
WAIT_SLICE = 0.05  # seconds a poll waits on one topic's member before trying the next one's
CLOSE_TIMEOUT = 10.0  # seconds closing waits for a member to give up its partitions, then to close


class KafkaConsumer(Consumer):
    """A member of the Kafka group `group_id` (one per topic, see the module docstring), subscribed to
    `topics` (Kafka name -> logical name); `client_config` carries the bootstrap address and
    client-wide settings."""

    def __init__(self, client_config: Mapping[str, object], group_id: str, topics: Mapping[str, str],
                 session_timeout_ms: int = 45_000, start: Mapping[tuple[str, int], int] | None = None):
        self.group = group_id
        self._where = f"Kafka at {client_config['bootstrap.servers']}"
        self._topics = dict(topics)
        self._names = {logical: name for name, logical in self._topics.items()}
        self._clients: dict[str, KafkaClientConsumer] = {}  # Kafka topic name -> its member
        self._start = dict(start or {})  # (Kafka topic name, partition) -> offset, until first assigned
        for name in self._topics:
            self._clients[name] = KafkaClientConsumer({
                **client_config, "group.id": group_id, "client.id": f"lodestar-{os.getpid()}-{name}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False, "isolation.level": "read_committed",
                "auto.offset.reset": "earliest", "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": session_timeout_ms,
                "heartbeat.interval.ms": max(100, min(3000, session_timeout_ms // 10))})
            self._clients[name].subscribe([name], on_assign=self._assigned, on_revoke=self._revoked)
        self._turn = 0
        self._unsent: dict[tuple[str, int], int] = {}  # (Kafka topic name, partition) -> refused commit
        self._closed = False

    def _assigned(self, client: KafkaClientConsumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._unsent.pop((tp.topic, tp.partition), None)
            offset = self._start.pop((tp.topic, tp.partition), None)
            if offset is not None:
                tp.offset = offset
        client.incremental_assign(partitions)

    @staticmethod
    def _revoked(client: KafkaClientConsumer, partitions: list[TopicPartition]) -> None:
        """Give the partitions up here: left to confluent-kafka, a revocation served while the
        member closes asks librdkafka for the rebalance protocol holding the GIL, and that request
        can go unanswered during a close, which freezes the whole process."""
        client.incremental_unassign(partitions)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        if self._unsent:
            self._send({})
        try:
            # consume(n, t) waits for all n or the whole timeout, so wait for one, then take what is here.
            messages = self._take(max_records)
            if not messages and timeout > 0:
                messages = self._wait(timeout)
                if messages and max_records > 1:
                    messages += self._take(max_records - 1)
        except KafkaException as exc:
            raise backend_error(f"{self._where}: consumer of group {self.group}: {exc.args[0]}", exc.args[0]) from exc
        records = []
        for message in messages:
            err = message.error()
            if err is None:
                records.append(record_of(self._topics[message.topic()], message))
            elif err.fatal():
                raise backend_error(f"{self._where}: consumer of group {self.group}: {err}", err)
            else:
                log.warning("consumer of group %s: %s", self.group, err)
        return records

    def _take(self, limit: int) -> list[Message]:
        """Up to limit messages already here, from the topics' members in turn (starting with
        another one each call, so none waits behind a busy one)."""
        clients = list(self._clients.values())
        self._turn = (self._turn + 1) % len(clients)
        taken: list[Message] = []
        for client in clients[self._turn:] + clients[:self._turn]:
            if len(taken) >= limit:
                break
            taken += client.consume(limit - len(taken), 0)
        return taken

    def _wait(self, timeout: float) -> list[Message]:
        """The first message to arrive within timeout seconds (with several topics, each topic's
        member is waited on for WAIT_SLICE in turn)."""
        clients = list(self._clients.values())
        if len(clients) == 1:
            return clients[0].consume(1, timeout)
        deadline = time.monotonic() + timeout
        while True:
            for client in clients:
                found = client.consume(1, max(0.0, min(WAIT_SLICE, deadline - time.monotonic())))
                if found:
                    return found
            if time.monotonic() >= deadline:
                return []

    def commit(self, records: Iterable[LogRecord]) -> None:
        positions: dict[tuple[str, int], int] = {}
        for record in records:
            key = (self._names[record.topic], record.partition)
            positions[key] = max(positions.get(key, 0), record.offset + 1)
        self._send(positions)

    def _send(self, positions: dict[tuple[str, int], int]) -> None:
        """Commit positions, with the commits refused earlier; keep what a rebalance refuses."""
        positions = {**self._unsent, **positions}
        self._unsent = {}
        errors: list[KafkaError] = []
        try:
            for name, client in self._clients.items():
                mine = {key: offset for key, offset in positions.items() if key[0] == name}
                if mine:
                    errors += self._commit(client, mine)
        except KafkaException as exc:
            raise backend_error(f"{self._where}: commit of group {self.group} failed: {exc.args[0]}",
                                exc.args[0]) from exc
        failed = [err for err in errors if err.code() not in _REBALANCED]
        if failed:
            raise backend_error(f"{self._where}: commit of group {self.group} failed: {errors}", failed[0])
        if errors:
            log.info("group %s: commit refused during a rebalance (%s); sent again while the partitions"
                     " stay here", self.group, errors[0])

    def _commit(self, client: KafkaClientConsumer, positions: dict[tuple[str, int], int]) -> list[KafkaError]:
        """Commit the positions of the partitions `client` still holds (those refused for a
        rebalance are kept in `_unsent`); the errors."""
        assigned = {(tp.topic, tp.partition) for tp in client.assignment()}
        held = {key: offset for key, offset in positions.items() if key in assigned}
        if len(held) < len(positions):
            log.info("group %s: not committing revoked partitions %s; their new owner reads them again",
                     self.group, sorted(set(positions) - assigned))
        if not held:
            return []
        offsets = [TopicPartition(name, part, offset) for (name, part), offset in held.items()]
        try:
            results = client.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            if exc.args[0].code() in _REBALANCED:
                self._unsent.update(held)
            return [exc.args[0]]
        refused = [tp for tp in results if tp.error is not None]
        self._unsent.update({(tp.topic, tp.partition): tp.offset for tp in refused if tp.error.code() in _REBALANCED})
        return [tp.error for tp in refused]

    def assignment(self) -> set[tuple[str, int]]:
        """The (topic, partition) pairs this member holds now."""
        return {(self._topics[tp.topic], tp.partition) for client in self._clients.values()
                for tp in client.assignment()}

    def close(self) -> None:
        """Leave the group; records not committed go to the remaining members.

        Commits a rebalance refused are sent first, the rebalance served meanwhile (for up to
        CLOSE_TIMEOUT): once it has left, a member can no longer commit, and its last records
        would be read again by the group.

        librdkafka's close can hang forever serving a rebalance that reaches a member while it
        closes (confluentinc/librdkafka#4884), as when this consumer's members leave one after
        the other. So each member first unsubscribes, and its rebalances are served until it
        holds no partition (for up to CLOSE_TIMEOUT); a close that still does not return within
        CLOSE_TIMEOUT is left behind in its thread, with a warning (the broker drops the member
        when its session times out). Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + CLOSE_TIMEOUT
        self._send_refused_commits(deadline)
        for client in self._clients.values():
            client.unsubscribe()
        for client in self._clients.values():  # until it holds nothing and has left the group
            while (client.assignment() or client.memberid()) and time.monotonic() < deadline:
                client.consume(1, WAIT_SLICE)  # serves the revocation; a record it returns is not ours
        for name, client in self._clients.items():
            closing = threading.Thread(target=client.close, name=f"close-{name}", daemon=True)
            closing.start()
            closing.join(CLOSE_TIMEOUT)
            if closing.is_alive():
                log.warning("group %s: the member reading %s did not close within %gs; left behind",
                            self.group, name, CLOSE_TIMEOUT)

    def _send_refused_commits(self, deadline: float) -> None:
        """Before leaving: serve the rebalance that refused commits and send them again, until
        they land or the partitions go (by deadline; a member that left can no longer commit)."""
        while self._unsent and time.monotonic() < deadline:
            for client in self._clients.values():
                client.consume(1, WAIT_SLICE)  # serves the rebalance; a record it returns is not ours
            try:
                self._send({})
            except BackendError as exc:
                log.warning("group %s: commit before leaving failed (%s); those records are read again",
                            self.group, exc)
                return
        if self._unsent:
            log.warning("group %s: commits of %s were still refused after %gs of rebalancing; their"
                        " records are read again", self.group, sorted(self._unsent), CLOSE_TIMEOUT)


def record_of(topic: str, message: Message) -> LogRecord:
    """The LogRecord of a consumed message of the logical topic `topic`."""
    key = message.key()
    return LogRecord(topic, message.partition(), message.offset(), key.decode() if key else "",
                     message.value() or b"", message.timestamp()[1])
