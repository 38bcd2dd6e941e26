"""The MCL outbox of the Cassandra aspect store: outbox ids, the pending index, the relay's side.

The design is explained in gms.store.cassandra. In short: a producer's outbox ids come from
its counter row, reserved in blocks; before an event is written, a pointer (producer, id) ->
urn goes into the pending index; the event itself is a row of the entity's partition, written
in the same conditional batch as its version. The relay follows the pointers in id order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from cassandra.query import PreparedStatement

from gms.store import OutboxMessage
from gms.store.cassandra_lease import ProducerInUse
from gms.store.cassandra_schema import (
    OUTBOX,
    SERIAL,
    START_WAIT,
    Runner,
    applied,
    prepare,
    quoted_keyspace,
    unlogged_batch,
    while_unavailable,
)
from ingest.backends.errors import BackendUnavailable

log = logging.getLogger(__name__)

_NO_LIMIT = 2**31 - 1
REMEMBERED = 100_000  # events kept in memory for the relay, at most
# Entities whose acknowledged events one request removes (Cassandra warns of unlogged batches
# over more partitions than its unlogged_batch_across_partitions_warn_threshold, 10 by default).
ACK_PARTITIONS = 10
FENCE_TTL = 86_400  # seconds a fence outlives the write it stopped (Cassandra gives up on a write in seconds)


class OutboxIds:
    """The outbox ids of one producer in this process: reserved from the producer's counter in
    blocks (one LWT per block), handed out in increasing order, tracked until their write settles.

    Ids below `first` were handed out by earlier processes; ids whose write failed in an unknown
    way are `uncertain`. The relay must confirm those with a SERIAL read."""

    def __init__(self, db: Runner, keyspace: str, producer: str, block: int):
        ks = quoted_keyspace(keyspace)
        self.producer = producer
        self._db = db
        self._block = block
        session = db.session
        self._reserve = prepare(session, f"UPDATE {ks}.producers SET next_id = ? WHERE producer = ? IF next_id = ?")
        register = prepare(session, f"INSERT INTO {ks}.producers (producer, next_id) VALUES (?, 1) IF NOT EXISTS")
        # IF NOT EXISTS is idempotent: asked again through a timeout (e.g. contention on a
        # cluster while a process restarts), a row an earlier attempt wrote is read back
        result = while_unavailable(lambda: db.execute(register, (producer,)), wait=START_WAIT)
        self.first = 1 if applied(result) else result.one().next_id
        self._next = self._end = self.first  # no block reserved yet
        self._unanswered: int | None = None  # the end a reservation asked for, its outcome unknown
        self._inflight: set[int] = set()
        self._uncertain: set[int] = set()
        self._settled = threading.Condition()

    def allocate(self, n: int) -> list[int]:
        """n fresh ids, in flight until settled."""
        with self._settled:
            while self._next + n > self._end:
                self._reserve_block(max(n, self._block))
            ids = list(range(self._next, self._next + n))
            self._next += n
            self._inflight.update(ids)
            return ids

    def _reserve_block(self, size: int) -> None:
        """Move the counter on by size and take the ids in between. A reservation whose answer
        was lost (a lightweight transaction timing out) may have been applied: the next one then
        finds the counter where that one put it, and takes that block instead."""
        wanted = self._end + size
        try:
            result = self._db.execute(self._reserve, (wanted, self.producer, self._end))
        except BackendUnavailable:
            self._unanswered = wanted
            raise
        if applied(result):
            end = wanted
        elif self._unanswered is not None and result.one().next_id == self._unanswered:
            end = self._unanswered
        else:
            raise ProducerInUse(f"producer id {self.producer!r} is used by another store at the same time")
        self._unanswered = None
        self._next, self._end = self._end, end

    def settle(self, ids: Sequence[int], certain: bool) -> None:
        """The writes of ids are over: with a known outcome, or (certain=False) an unknown one."""
        with self._settled:
            self._inflight.difference_update(ids)
            if not certain:
                self._uncertain.update(ids)
            self._settled.notify_all()

    def floor(self, timeout: float) -> int:
        """An id below which every id has settled, after waiting (up to timeout) for the ids
        handed out before this call."""
        with self._settled:
            handed_out = self._next
            if not self._settled.wait_for(lambda: min(self._inflight, default=handed_out) >= handed_out, timeout):
                log.warning("producer id %s: outbox id %d still being written after %gs; publishing the events"
                            " before it only", self.producer, min(self._inflight), timeout)
            return min(self._inflight, default=self._next)

    def uncertain(self, outbox_id: int) -> bool:
        return outbox_id < self.first or outbox_id in self._uncertain

    def forget_through(self, upto: int) -> None:
        with self._settled:
            self._uncertain = {i for i in self._uncertain if i > upto}


class Reserved:
    """Outbox ids reserved for the events of one entity, their pointers already written. They
    are taken in order, and only within `use_within` seconds of the reservation (so each event's
    batch is still sent soon after its pointer); once a take fails,
    none is taken any more, so the entity's later events get higher ids than its earlier ones."""

    def __init__(self, urn: str, ids: list[int], use_within: float):
        self.urn = urn
        self._ids = ids
        self._next = 0
        self._deadline = time.monotonic() + use_within

    def take(self, n: int) -> list[int] | None:
        """The next n ids, or None (from then on) if fewer are left or it is too late."""
        if self._next + n > len(self._ids) or time.monotonic() > self._deadline:
            self._deadline = -1.0
            return None
        taken = self._ids[self._next:self._next + n]
        self._next += n
        return taken

    def rest(self) -> list[int]:
        """The ids never taken (none is taken after this)."""
        rest, self._next = self._ids[self._next:], len(self._ids)
        return rest


@dataclass
class Staged:
    """Events of one partition with their ids: `rows` go into the caller's batch, which sets
    `applied` to its outcome."""

    ids: list[int]
    rows: list[tuple[PreparedStatement, tuple[Any, ...]]]
    applied: bool = field(default=False)


class CassandraOutbox:
    """Writing events (with pointers) and relaying them (pending, ack) for one producer."""

    def __init__(self, db: Runner, keyspace: str, producer: str, id_block: int, settle_after: float):
        ks = quoted_keyspace(keyspace)
        self.ids = OutboxIds(db, keyspace, producer, id_block)
        self.producer = producer
        self.settle_after = settle_after
        self._db = db
        session = db.session
        self._acked = 0  # every id up to this one is acknowledged
        self._ack_lock = threading.Lock()
        # Events this process wrote and saw applied, by id, until acknowledged: the relay takes
        # them from here instead of reading them back (up to REMEMBERED; past that it reads).
        self._written: dict[int, OutboxMessage] = {}
        self._written_lock = threading.Lock()
        self._point = prepare(session, f"INSERT INTO {ks}.outbox_pending (producer, id, urn) VALUES (?, ?, ?)")
        self._unpoint = prepare(session, f"DELETE FROM {ks}.outbox_pending WHERE producer = ? AND id = ?")
        self._unpoint_range = prepare(session, f"DELETE FROM {ks}.outbox_pending"
                                               " WHERE producer = ? AND id > ? AND id <= ?")
        self._unpoint_span = prepare(session, f"DELETE FROM {ks}.outbox_pending"
                                              " WHERE producer = ? AND id >= ? AND id <= ?")
        self._pointers = prepare(session, f"SELECT id, urn FROM {ks}.outbox_pending"
                                          " WHERE producer = ? AND id > ? AND id < ? LIMIT ?")
        # IF NOT EXISTS: an event's row is written only where no fence stands (see pending)
        self._add = prepare(session, f"INSERT INTO {ks}.aspects (urn, kind, name, seq, topic, msg_key, payload)"
                                     f" VALUES (?, '{OUTBOX}', ?, ?, ?, ?, ?) IF NOT EXISTS")
        self._fence = prepare(session, f"INSERT INTO {ks}.aspects (urn, kind, name, seq) VALUES (?, '{OUTBOX}', ?, ?)"
                                       f" IF NOT EXISTS USING TTL {FENCE_TTL}")
        message = f"SELECT topic, msg_key, payload FROM {ks}.aspects WHERE urn = ? AND kind = '{OUTBOX}'" \
                  " AND name = ? AND seq = ?"
        self._message, self._message_serial = prepare(session, message), prepare(session, message, SERIAL)
        self._remove = prepare(session, f"DELETE FROM {ks}.aspects WHERE urn = ? AND kind = '{OUTBOX}'"
                                        " AND name = ? AND seq >= ? AND seq <= ?")

    def reserve(self, counts: Mapping[str, int]) -> dict[str, Reserved]:
        """Ids for the events of entities (urn -> how many), consecutive per entity, their
        pointers all written at once (one batch of the producer's partition); `release`
        removes those left unused."""
        ids = self.ids.allocate(sum(counts.values()))
        try:
            self._db.execute(unlogged_batch([(self._point, (self.producer, i, urn))
                                              for urn, i in zip(_repeated(counts), ids, strict=True)]))
        except BaseException:
            self.ids.settle(ids, certain=False)
            raise
        reserved, start = {}, 0
        for urn, n in counts.items():
            reserved[urn] = Reserved(urn, ids[start:start + n], self.settle_after / 10)
            start += n
        return reserved

    def release(self, reservations: Sequence[Reserved]) -> None:
        """Remove the pointers of the reserved ids never taken (a contiguous tail of each
        reservation), in one request."""
        spans = [rest for rest in (reserved.rest() for reserved in reservations) if rest]
        if not spans:
            return
        ids = [i for rest in spans for i in rest]
        try:
            self._db.execute(unlogged_batch([(self._unpoint_span, (self.producer, rest[0], rest[-1]))
                                             for rest in spans]))
        except BaseException:
            self.ids.settle(ids, certain=False)
            raise
        self.ids.settle(ids, certain=True)

    @contextmanager
    def writing(self, urn: str, messages: Sequence[OutboxMessage], reserved: Reserved | None = None
                ) -> Iterator[Staged]:
        """Allocate ids (from `reserved` if it has them) and write the pointers of events to be
        stored in urn's partition (unless reserved); the caller writes `rows` and sets `applied`.
        Pointers of a batch that did not apply are removed."""
        taken = reserved.take(len(messages)) if reserved is not None and messages else None
        ids = taken if taken is not None else self.ids.allocate(len(messages)) if messages else []
        try:
            if taken is None:
                self._db.concurrently([(self._point, (self.producer, i, urn)) for i in ids])
            staged = Staged(ids, [(self._add, (urn, self.producer, i, m.topic, m.key, m.value))
                                  for i, m in zip(ids, messages, strict=True)])
            yield staged
            if staged.applied:
                with self._written_lock:
                    if len(self._written) < REMEMBERED:
                        self._written.update(zip(ids, messages, strict=True))
            else:
                self._db.concurrently([(self._unpoint, (self.producer, i)) for i in ids])
        except BaseException:
            self.ids.settle(ids, certain=False)
            raise
        self.ids.settle(ids, certain=True)

    def append(self, messages: Sequence[OutboxMessage]) -> None:
        """Events without a version, each in the partition of its key."""
        for key, group in groupby(messages, key=lambda m: m.key):
            with self.writing(key, list(group)) as staged:
                staged.applied = applied(self._db.execute(unlogged_batch(staged.rows)))
                if not staged.applied:  # only a fence stops it, and the relay fences no write of this process
                    raise RuntimeError(f"events of {key} found their outbox ids fenced")

    def pending(self, limit: int) -> list[tuple[int, OutboxMessage]]:
        """Pending events in id order, up to the first id whose write has not settled."""
        floor = self.ids.floor(self.settle_after)
        found: list[tuple[int, OutboxMessage]] = []
        after = self._acked
        while len(found) < limit:
            want = limit - len(found)
            pointers = list(self._db.execute(self._pointers, (self.producer, after, floor, want)))
            if not pointers:
                break
            dead = []
            for pointer, message in zip(pointers, self._fetch(pointers), strict=True):
                if message is None and self.ids.uncertain(pointer.id):
                    message = self._settle(pointer)
                if message is not None:
                    found.append((pointer.id, message))
                else:
                    dead.append(pointer.id)  # its batch did not apply, and never will
            self._db.concurrently([(self._unpoint, (self.producer, i)) for i in dead])
            if floor <= pointers[-1].id or len(pointers) < want:
                break
            after = pointers[-1].id
        return found

    def _fetch(self, pointers: list[Any]) -> list[OutboxMessage | None]:
        """The event of each pointer (None if absent): remembered if this process wrote it,
        else read from the entity's partition."""
        with self._written_lock:
            found = [self._written.get(p.id) for p in pointers]
        unknown = [i for i, message in enumerate(found) if message is None]
        results = self._db.concurrently([
            (self._message_serial if self.ids.uncertain(p.id) else self._message, (p.urn, self.producer, p.id))
            for p in (pointers[i] for i in unknown)])
        for i, result in zip(unknown, results, strict=True):
            if (row := result.one()) and row.payload is not None:  # (a fence has no payload)
                found[i] = OutboxMessage(row.topic, row.msg_key, row.payload)
        return found

    def _settle(self, pointer: Any) -> OutboxMessage | None:
        """The event of a pointer whose batch may still be on its way (written by an earlier
        process, or timed out): a fence row is put where the event would be, with IF NOT EXISTS.
        Paxos orders it with that batch, whose event row is conditional too: if the fence is
        applied, the batch never will be (None); otherwise the batch was applied first and its
        event is read. So the relay never waits for a write that may or may not land."""
        if applied(self._db.execute(self._fence, (pointer.urn, self.producer, pointer.id))):
            return None
        row = self._db.execute(self._message_serial, (pointer.urn, self.producer, pointer.id)).one()
        return OutboxMessage(row.topic, row.msg_key, row.payload) if row and row.payload is not None else None

    def ack(self, ids: Sequence[int]) -> None:
        """Remove every pending event up to the largest id: the rows (one range per entity:
        every event of this producer there between its first and last pointer is acknowledged
        too), then the pointers."""
        if not ids:
            return
        upto = max(ids)
        with self._ack_lock:
            if upto <= self._acked:
                return
            spans: dict[str, tuple[int, int]] = {}
            for p in self._db.execute(self._pointers, (self.producer, self._acked, upto + 1, _NO_LIMIT)):
                first, last = spans.get(p.urn, (p.id, p.id))
                spans[p.urn] = (min(first, p.id), max(last, p.id))
            removals = [(self._remove, (urn, self.producer, first, last)) for urn, (first, last) in spans.items()]
            self._db.concurrently([(unlogged_batch(removals[i:i + ACK_PARTITIONS]), None)
                                   for i in range(0, len(removals), ACK_PARTITIONS)])
            self._db.execute(self._unpoint_range, (self.producer, self._acked, upto))
            self._acked = upto
        with self._written_lock:
            for outbox_id in [i for i in self._written if i <= upto]:
                del self._written[outbox_id]
        self.ids.forget_through(upto)


def _repeated(counts: Mapping[str, int]) -> Iterator[str]:
    """Each key as many times as its count, in order."""
    for key, n in counts.items():
        yield from [key] * n
