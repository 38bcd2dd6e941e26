"""The distributed aspect store: Apache Cassandra, with lightweight transactions (LWT).

Tables, in a keyspace the caller names (created if absent: SimpleStrategy, replication factor
configurable; a keyspace created beforehand, e.g. with NetworkTopologyStrategy, is kept):

- `aspects`: one partition per entity (URN), clustered by (kind, name, seq). Rows of kind
  'aspect' are versions (name = aspect, seq = version, newest first), so an aspect's history
  is one slice and its latest version one row. Rows of kind 'outbox' are pending events
  (name = producer id, seq = outbox id) in the partition of the entity they describe.
- `outbox_pending`: pointers (producer, outbox id) -> urn, one partition per producer, in id order.
- `producers`: each producer's counter, the next unreserved outbox id.
- `leases`: the holder of each producer id, a row with a TTL renewed by LWT.

What is atomic. `insert` writes the version row with `IF NOT EXISTS` and its events in one
single-partition conditional batch: the version and its MCLs are applied together or not at
all, and of N writers (in any number of GMS instances) inserting the same version exactly one
is applied; the others get False. There is no transaction across partitions, so a `batch()`
is no transaction: each insert is applied when it is made, and a batch that fails part-way
cannot undo the inserts it already made. The write path fits this: it validates before the
batch and applies each entity's proposals inside `together(urn)`, which holds their versions
and events and writes them at the end as one conditional batch of the entity's partition (every
row IF NOT EXISTS): one LWT for all the versions a request makes of an entity (the key aspect of
a new one included), applied all or none; if another writer took one of those versions
meanwhile, none is applied and the write path applies the proposals again on a fresh read.
Inserts outside `together` are one LWT each: then a crash between a new entity's key aspect and
its aspect leaves the key aspect only, a valid state (the retried proposal adds the aspect), and
deleting an entity tombstones its aspects one LWT each, the key aspect last, so a crash part-way
leaves a live entity with fewer aspects, which a retry finishes. Reads inside a batch are SERIAL: they see
every applied LWT, the batch's own included, and complete any in progress; but for the read of
a whole entity (`prefetch`, `together`), which is QUORUM: a SERIAL read costs Cassandra as much
as an LWT (a Paxos round; about 0.9 ms of CPU against 0.25-0.3 ms for a QUORUM read, measured
on the development server), and the LWTs' commits are QUORUM writes, so it still sees every LWT
that was acknowledged (or applied at a quorum). An LWT still in progress may be missed: the
entity's conditional batch then finds its version taken, does not apply, and the entity is
read again, after that batch's Paxos round has completed the other. A batch may be used from
several threads at once, one entity per thread (`entity_concurrency`).

Producers and the relay. Every open store is one producer of events (the event log drops a
message whose sequence is not above the producer's last, Kafka's idempotent-producer model),
so a producer id must be used by one open store at a time: give each GMS instance its own,
stable one (e.g. its name); without one, a fresh id is generated and registered. A store
holds a lease on its producer id (`leases`, gms.store.cassandra_lease): it writes and publishes
only while the lease is renewed; once a dead store's lease has expired, another store takes its
outbox over (`orphaned_producers`, `take_over`: gms.store.cassandra_takeover). Outbox ids
come from the producer's counter row, reserved in blocks by an LWT (a second store using the
same id is detected when it reserves; a reservation whose answer was lost, a timeout, is
taken by the next one if it was applied). For each event the store writes its pointer first,
then the conditional batch; a batch that did not apply removes its pointers. (The entities a
batch was told of (`prefetch`) are read READ_TOGETHER at a time, when the first of them is
needed, and the pointers of the ids their versions will take are written together; an id is
taken within `settle_after / 10` seconds of its pointer or not at all; the pointers of ids not
taken are removed when the batch ends, in one request; `settle_after` also bounds how long
the relay waits for this process's own writes in flight.) The relay
(`pending_outbox`) reads the producer's pointers in id order, which is one partition, not a
scan of every entity, and reads each event from its entity's partition. Ids are handed out
before their batch is applied, so the relay only goes up to the lowest id still being written
in this process (it waits for the writes begun before it was called, so a caller's own events
are published when its apply returns). Pointers left by an earlier process or by a write whose
outcome is unknown (a timeout) are confirmed with a SERIAL read, which completes a batch still
in progress; where the event is missing, the relay fences it: a row without payload at the
event's place, inserted IF NOT EXISTS (with a TTL). An event's row is itself inserted IF NOT
EXISTS in its conditional batch, so Paxos orders the two: either the batch was applied first
(the fence is not, and the event is read and published) or the fence was, and the batch, should
it still arrive, is not applied at all. So the relay never waits for a write that may or may not
land, and nothing after it is held back (a restarted GMS publishes at once). Acknowledging
deletes the events (one range per entity, `cassandra_outbox.ACK_PARTITIONS` entities a
request), then the pointers up to the largest id as one range. A hard delete (`purge`)
removes the entity's versions but not its pending events.

Scans. `scan_latest` walks the ring in token order, reading the versions of aspects (the slice
kind = 'aspect' of each partition) and keeping the first, newest, of each aspect; it is
resumable after a (urn, aspect): the rest of partitions with that URN's token, then the tokens
above. It does not ask Cassandra to keep the newest (GROUP BY): Cassandra 5.0 fails a paged
GROUP BY over a range of partitions once one of them holds a purge's range tombstone (a read
failure, "open RT bound as its last item"). `token_ranges(n)` splits the ring for restores in
parallel.

Writes that are not LWTs (pointers, acknowledgements, purges) take the coordinator's clock
(a connected store turns client timestamps off), as the LWT ballots do; clocks are assumed
synchronised, as Cassandra assumes for mixed LWT and plain writes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain, groupby, islice
from typing import Any

import orjson
from cassandra.cluster import Session

from gms.store import AspectBatch, AspectStore, Outbox, OutboxMessage, StoredAspect, Together
from gms.store.cassandra_lease import LEASE_TTL, Lease, Leases
from gms.store.cassandra_outbox import CassandraOutbox, Reserved
from gms.store.cassandra_schema import (
    ASPECT,
    QUORUM,
    SERIAL,
    Runner,
    applied,
    ensure_schema,
    prepare,
    quoted_keyspace,
    unlogged_batch,
)
from gms.store.cassandra_takeover import Takeover
from ingest.backends import Endpoints, cassandra_session

MIN_TOKEN, MAX_TOKEN = -(2**63), 2**63 - 1  # Murmur3Partitioner
# Each operation is a round trip, so a batch's entities are applied this many at a time.
ENTITY_CONCURRENCY = 16
# Prefetched entities read at once (and whose outbox pointers one request writes).
READ_TOGETHER = 32
# Bytes of an entity's writes held by `together` before it asks to write them (a batch of one
# partition is one mutation, which Cassandra bounds by half a commit log segment).
HELD_BYTES = 512 * 1024


@dataclass(frozen=True, slots=True)
class TokenRange:
    """Murmur3 tokens from start to end, both included."""

    start: int = MIN_TOKEN
    end: int = MAX_TOKEN

    def split(self, parts: int) -> list[TokenRange]:
        """parts contiguous ranges covering this one."""
        bounds = [self.start + (self.end - self.start + 1) * i // parts for i in range(parts + 1)]
        return [TokenRange(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]


class _Held(Together):
    """The versions and events of one entity held for one conditional batch, in order."""

    def __init__(self) -> None:
        self.rows: list[StoredAspect] = []
        self.events: list[OutboxMessage] = []
        self.size = 0  # bytes of values, system metadata and events, about

    @property
    def full(self) -> bool:
        return self.size >= HELD_BYTES

    def add(self, row: StoredAspect | None, events: Sequence[OutboxMessage]) -> None:
        if row is not None:
            self.rows.append(row)
            self.size += len(row.value_json or "") + 100
        self.events.extend(events)
        self.size += sum(len(event.value) for event in events)

    def refresh(self, aspect: str, version: int, system_metadata: dict[str, Any]) -> StoredAspect | None:
        """The held version, now with that system metadata (None: not held)."""
        for i, row in enumerate(self.rows):
            if row.aspect == aspect and row.version == version:
                self.rows[i] = replace(row, system_metadata=system_metadata)
                return self.rows[i]
        return None


class CassandraBatch(AspectBatch):
    """Operations applied as they are made (see the module docstring); reads are SERIAL, but
    for the read of a whole entity (QUORUM).

    Prefetched entities are read when the first of them is needed, up to READ_TOGETHER at a
    time in the order they were prefetched: their newest versions in QUORUM reads sent at once,
    the outbox ids of their events reserved (one more for the key aspect of a new entity) and the
    ids' pointers written in one request. The versions read are kept up to date with the
    batch's own writes; an insert that finds its version taken drops its entity's, so the write
    path's retry reads afresh. `release` removes the pointers left unused when the batch ends.

    `together(urn)` reads the entity so too (unless prefetched) and holds its inserts and
    events: at the end of the block they are written as ONE conditional batch (every version
    and event row IF NOT EXISTS, all applied or none), one lightweight transaction for all the
    versions of the entity instead of one each."""

    def __init__(self, store: CassandraAspectStore):
        self._store = store
        self._wanted: dict[str, int] = {}  # prefetched, not read yet: urn -> versions, in order
        self._known: dict[str, dict[str, StoredAspect]] = {}  # read: urn -> aspect -> newest
        self._reading = threading.Lock()
        self._reserved: dict[str, Reserved] = {}
        self._held: dict[str, _Held] = {}  # entities inside together(), one thread each

    def prefetch(self, urn: str, versions: int) -> None:
        with self._reading:
            if urn not in self._known:
                self._wanted[urn] = versions

    def _entity(self, urn: str) -> dict[str, StoredAspect]:
        """The newest version of each aspect of a prefetched or together() entity, read now if
        not yet (with the next prefetched ones)."""
        known = self._known.get(urn)
        if known is not None:
            return known
        with self._reading:
            if urn not in self._known:
                self._read_together(urn)
            return self._known[urn]

    def _read_together(self, urn: str) -> None:
        """Read urn and the next prefetched entities, and reserve the outbox ids of the latter."""
        group = [urn, *islice((other for other in self._wanted if other != urn), READ_TOGETHER - 1)]
        newest = self._store._newest_of(group, QUORUM)
        versions = {entity: self._wanted.pop(entity) for entity in group if entity in self._wanted}
        counts = {entity: n + (0 if newest[entity] else 1) for entity, n in versions.items() if n}
        if counts:
            self._reserved.update(self._store._held_outbox().reserve(counts))
        for entity in group:
            self._known[entity] = {row.aspect: row for row in newest[entity]}

    @contextmanager
    def together(self, urn: str) -> Iterator[Together]:
        known = self._entity(urn)
        held = self._held[urn] = _Held()
        try:
            yield held
            del self._held[urn]
            held.applied = not (held.rows or held.events) or self._store._write(
                urn, held.rows, held.events, self._reserved.get(urn))
        except BaseException:
            self._held.pop(urn, None)
            self._forget(urn, known)
            raise
        if not held.applied:
            self._forget(urn, known)

    def _forget(self, urn: str, known: dict[str, StoredAspect]) -> None:
        """Drop what was read of urn (that read, not a newer one), so it is read afresh."""
        with self._reading:
            if self._known.get(urn) is known:
                del self._known[urn]

    def release(self) -> None:
        """Remove the pointers of the reserved outbox ids no event took."""
        self._store._outbox.release(list(self._reserved.values()))
        self._reserved.clear()

    def latest(self, urn: str, aspect: str) -> StoredAspect | None:
        if urn in self._known or urn in self._wanted:
            return self._entity(urn).get(aspect)
        return self._store._latest(urn, aspect, SERIAL)

    def live_aspects(self, urn: str) -> list[StoredAspect]:
        if urn in self._known or urn in self._wanted:
            return [row for _, row in sorted(self._entity(urn).items()) if row.exists]
        return self._store._live(urn, SERIAL)

    def insert(self, row: StoredAspect, outbox: Sequence[OutboxMessage]) -> bool:
        held = self._held.get(row.urn)
        if held is not None:
            newest = self._known[row.urn].get(row.aspect)
            if newest is not None and newest.version >= row.version:
                return False
            held.add(row, outbox)
            self._known[row.urn][row.aspect] = row
            return True
        applied = self._store._write(row.urn, [row], outbox, self._reserved.get(row.urn))
        if row.urn in self._known:
            if applied:
                self._known[row.urn][row.aspect] = row
            else:
                self._known.pop(row.urn, None)
        return applied

    def refresh(self, urn: str, aspect: str, version: int, system_metadata: dict[str, Any]) -> None:
        held = self._held.get(urn)
        if held is not None and (row := held.refresh(aspect, version, system_metadata)) is not None:
            self._known[urn][aspect] = row
            return
        self._store._refresh(urn, aspect, version, system_metadata)
        known = self._known.get(urn)
        if known is not None and aspect in known and known[aspect].version == version:
            known[aspect] = replace(known[aspect], system_metadata=system_metadata)

    def append_outbox(self, outbox: Sequence[OutboxMessage]) -> None:
        held = self._held.get(outbox[0].key) if outbox else None
        if held is not None and all(event.key == outbox[0].key for event in outbox):
            held.add(None, outbox)
            return
        self._store._held_outbox().append(outbox)

    def purge(self, urn: str) -> None:
        self._known.pop(urn, None)
        self._store._purge(urn)


class CassandraAspectStore(AspectStore):
    """Versioned aspects in Cassandra, with conditional writes across GMS instances."""

    def __init__(self, session: Session, keyspace: str, producer_id: str | None = None, *,
                 replication_factor: int = 1, id_block: int = 1000, settle_after: float = 30.0,
                 owns_session: bool = False, entity_concurrency: int = ENTITY_CONCURRENCY,
                 lease_ttl: int = LEASE_TTL):
        """Tables are created if absent. `producer_id`: this store's own (see the module
        docstring); its lease is acquired first, waiting up to twice `lease_ttl` seconds for an
        earlier holder's to expire (else ProducerInUse). `owns_session`: close() shuts the
        session's cluster down. `entity_concurrency`: entities the write path works on at once
        (see AspectStore)."""
        self.entity_concurrency = entity_concurrency
        self.keyspace = keyspace  # other adapters may keep their tables beside the store's
        self._session = session
        self._db = Runner(session)
        self._owns_session = owns_session
        partitioner = session.cluster.metadata.partitioner
        if partitioner and not partitioner.endswith("Murmur3Partitioner"):
            raise ValueError(f"the Cassandra aspect store needs the Murmur3Partitioner, not {partitioner}")
        ensure_schema(session, keyspace, replication_factor)
        ks = quoted_keyspace(keyspace)
        producer = producer_id or uuid.uuid4().hex
        leases = Leases(self._db, keyspace)
        self._lease = Lease(leases, producer, lease_ttl)
        self._lease.acquire(wait=2 * lease_ttl)
        self._lease.keep()
        self._new_outbox = partial(CassandraOutbox, self._db, keyspace, producer, id_block, settle_after)
        self._outbox = self._new_outbox()
        self._outbox_generation = self._lease.check()
        self._outbox_lock = threading.Lock()
        self._takeover = Takeover(self._db, keyspace, leases, producer, lease_ttl, settle_after)
        columns = f"SELECT urn, kind, name, seq, value, system_metadata FROM {ks}.aspects"
        aspect = f"{columns} WHERE urn = ? AND kind = '{ASPECT}' AND name = ?"
        self._get_latest = prepare(session, f"{aspect} LIMIT 1")
        self._get_version = prepare(session, f"{aspect} AND seq = ?")
        self._history = prepare(session, f"{aspect} ORDER BY kind DESC, name DESC, seq ASC")
        self._newest_query = prepare(session, f"{columns} WHERE urn = ? AND kind = '{ASPECT}' GROUP BY name")
        # Cassandra asks ALLOW FILTERING of any clustering condition on a range of partitions
        versions = f"AND kind = '{ASPECT}' ALLOW FILTERING"
        self._scan_from = prepare(session, f"{columns} WHERE token(urn) >= ? AND token(urn) <= ? {versions}")
        self._scan_after = prepare(session, f"{columns} WHERE token(urn) > token(?) AND token(urn) <= ? {versions}")
        self._scan_same_token = prepare(session, f"{columns} WHERE token(urn) = token(?) {versions}")
        self._insert_version = prepare(
            session, f"INSERT INTO {ks}.aspects (urn, kind, name, seq, value, system_metadata)"
                     f" VALUES (?, '{ASPECT}', ?, ?, ?, ?) IF NOT EXISTS")
        self._refresh_statement = prepare(session, f"UPDATE {ks}.aspects SET system_metadata = ? WHERE urn = ?"
                                         f" AND kind = '{ASPECT}' AND name = ? AND seq = ? IF EXISTS")
        self._purge_statement = prepare(session, f"DELETE FROM {ks}.aspects WHERE urn = ? AND kind = '{ASPECT}'")

    @classmethod
    def connect(cls, endpoints: Endpoints, keyspace: str, producer_id: str | None = None, *,
                replication_factor: int = 1, connect_timeout: float = 5.0, request_timeout: float = 10.0,
                local_dc: str | None = None, **options: Any) -> CassandraAspectStore:
        """A store on its own cluster connection. Raises BackendUnavailable, naming the contact
        points, when none answers within connect_timeout (per contact point)."""
        session = cassandra_session(endpoints, connect_timeout=connect_timeout, request_timeout=request_timeout,
                                    local_dc=local_dc)
        try:
            return cls(session, keyspace, producer_id, replication_factor=replication_factor,
                       owns_session=True, **options)
        except BaseException:
            session.cluster.shutdown()
            raise

    @property
    def session(self) -> Session:
        """The driver session (shared with other adapters on the same cluster, if wanted)."""
        return self._session

    @property
    def producer_id(self) -> str:
        return self._outbox.producer

    @property
    def lease_ttl(self) -> int:
        """Seconds this store's lease on its producer id outlives its last renewal."""
        return self._lease.ttl

    @contextmanager
    def batch(self) -> Iterator[AspectBatch]:
        self._lease.check()
        batch = CassandraBatch(self)
        try:
            yield batch
        finally:
            batch.release()

    def get(self, urn: str, aspect: str, version: int | None = None) -> StoredAspect | None:
        if version is None:
            return self._latest(urn, aspect, QUORUM)
        return _first(self._db.execute(self._get_version, (urn, aspect, version)))

    def history(self, urn: str, aspect: str) -> list[StoredAspect]:
        return [_stored(row) for row in self._db.rows(self._db.execute(self._history, (urn, aspect)))]

    def entity(self, urn: str) -> list[StoredAspect]:
        return self._live(urn, QUORUM)

    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]:
        return self._held_outbox().pending(limit)

    def ack_outbox(self, ids: Sequence[int]) -> None:
        self._held_outbox().ack(ids)

    def orphaned_producers(self) -> list[str]:
        return self._takeover.orphaned(self.producer_id)

    def take_over(self, producer: str) -> AbstractContextManager[Outbox] | None:
        return self._takeover.take(producer) if producer != self.producer_id else None

    def scan_latest(self, after: tuple[str, str] | None = None, limit: int = 1000,
                    within: TokenRange | None = None) -> Iterator[StoredAspect]:
        """See AspectStore.scan_latest; `within` limits the scan to one of `token_ranges(n)`
        (then `after` must lie in it)."""
        span = within or TokenRange()
        fetch = min(limit + 100, 5000)
        if after is None:
            rows: Iterator[Any] = iter(self._db.execute(
                _paged(self._scan_from.bind((span.start, span.end)), fetch)))
        else:
            position = (after[0].encode(), after[1].encode())
            same_token = (row for row in self._db.execute(self._scan_same_token, (after[0],))
                          if (row.urn.encode(), row.name.encode()) > position)
            rows = chain(same_token, self._db.execute(
                _paged(self._scan_after.bind((after[0], span.end)), fetch)))
        live = (row for row in _newest_of_each(self._db.rows(rows)) if row.value is not None)
        return (_stored(row) for row in islice(live, limit))

    @staticmethod
    def token_ranges(parts: int) -> list[TokenRange]:
        """The ring split into parts ranges, for scanning in parallel."""
        return TokenRange().split(parts)

    def close(self) -> None:
        self._lease.close()
        if self._owns_session:
            self._session.cluster.shutdown()

    def _held_outbox(self) -> CassandraOutbox:
        """The outbox, if this store's lease is held (else LeaseLost). A lease lost and acquired
        again means another process may have relayed and fenced in between: the outbox starts
        afresh, its earlier ids all to be confirmed, as in a restarted process."""
        generation = self._lease.check()
        with self._outbox_lock:
            if generation != self._outbox_generation:
                self._outbox, self._outbox_generation = self._new_outbox(), generation
            return self._outbox

    def _latest(self, urn: str, aspect: str, consistency: int) -> StoredAspect | None:
        statement = self._get_latest.bind((urn, aspect))
        statement.consistency_level = consistency
        return _first(self._db.execute(statement))

    def _live(self, urn: str, consistency: int) -> list[StoredAspect]:
        return [row for row in self._newest_of([urn], consistency)[urn] if row.exists]

    def _newest_of(self, urns: Sequence[str], consistency: int) -> dict[str, list[StoredAspect]]:
        """The newest version of each aspect of each entity, deletions included, by aspect
        name; one read per entity, all at once. (One read of all with `urn IN` would make
        Cassandra warn, in its log and to the client, of each: GROUP BY over partitions.)"""
        statements = [self._newest_query.bind((urn,)) for urn in urns]
        for statement in statements:
            statement.consistency_level = consistency
        results = self._db.concurrently([(statement, None) for statement in statements])
        return {urn: [_stored(row) for row in result] for urn, result in zip(urns, results, strict=True)}

    def _write(self, urn: str, rows: Sequence[StoredAspect], outbox: Sequence[OutboxMessage],
               reserved: Reserved | None = None) -> bool:
        """Versions of one entity and events in its partition as one conditional batch: all
        written, or none if one of the versions exists (False)."""
        versions = [(self._insert_version, (row.urn, row.aspect, row.version, row.value_json,
                                            orjson.dumps(row.system_metadata).decode())) for row in rows]
        with self._held_outbox().writing(urn, outbox, reserved) as staged:
            staged.applied = applied(self._db.execute(unlogged_batch([*versions, *staged.rows])))
        return staged.applied

    def _refresh(self, urn: str, aspect: str, version: int, system_metadata: dict[str, Any]) -> None:
        # An LWT like the insert: never recreates a purged version, never loses to its timestamp.
        self._db.execute(self._refresh_statement, (orjson.dumps(system_metadata).decode(), urn, aspect, version))

    def _purge(self, urn: str) -> None:
        self._db.execute(self._purge_statement, (urn,))


def _stored(row: Any) -> StoredAspect:
    return StoredAspect(row.urn, row.name, row.seq, row.value, orjson.loads(row.system_metadata))


def _first(rows: Any) -> StoredAspect | None:
    row = rows.one()
    return _stored(row) if row else None


def _newest_of_each(versions: Iterator[Any]) -> Iterator[Any]:
    """The first row of each (urn, aspect) among rows in clustering order: its newest version."""
    return (next(rows) for _, rows in groupby(versions, key=lambda row: (row.urn, row.name)))


def _paged(statement: Any, fetch_size: int) -> Any:
    statement.fetch_size = fetch_size
    return statement
