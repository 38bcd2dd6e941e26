"""Taking a dead producer's outbox over (see gms.store.cassandra_lease for the leases).

A producer whose lease has expired while pointers remain in its pending index is orphaned.
A live store takes its lease (an LWT: of several takers exactly one wins) and relays its
outbox as that producer: every id of it is then from an earlier process, so each pointer
whose event is missing is fenced (gms.store.cassandra_outbox), and the event log drops what
the producer had already published (its sequence numbers).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import TracebackType

from gms.store import OutboxMessage
from gms.store.cassandra_lease import Lease, Leases
from gms.store.cassandra_outbox import CassandraOutbox
from gms.store.cassandra_schema import Runner, prepare, quoted_keyspace


class TakenOutbox:
    """A dead producer's outbox, relayed under its lease until closed (then released)."""

    def __init__(self, lease: Lease, outbox: CassandraOutbox):
        self._lease = lease
        self._outbox = outbox

    @property
    def producer_id(self) -> str:
        return self._outbox.producer

    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]:
        self._lease.check()
        return self._outbox.pending(limit)

    def ack_outbox(self, ids: Sequence[int]) -> None:
        self._lease.check()
        self._outbox.ack(ids)

    def __enter__(self) -> TakenOutbox:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._lease.close()


class Takeover:
    """Finds orphaned producers in a keyspace and takes their outboxes over for one store."""

    def __init__(self, db: Runner, keyspace: str, leases: Leases, holder: str, ttl: int, settle_after: float):
        """`holder`: the taking store's producer id (its leases' holders start with it)."""
        self._db = db
        self._keyspace = keyspace
        self._leases = leases
        self._holder = holder
        self._ttl = ttl
        self._settle_after = settle_after
        ks = quoted_keyspace(keyspace)
        self._with_pointers = prepare(db.session, f"SELECT DISTINCT producer FROM {ks}.outbox_pending")

    def orphaned(self, own: str) -> list[str]:
        """Producer ids other than `own` with pointers pending and no live lease."""
        pending = {row.producer for row in self._db.execute(self._with_pointers)}
        return sorted(pending - self._leases.held() - {own})

    def take(self, producer: str) -> TakenOutbox | None:
        """The producer's outbox under a lease of this store's, or None if someone holds it."""
        lease = Lease(self._leases, producer, self._ttl, holder=f"{self._holder}:{uuid.uuid4().hex}")
        if not lease.try_acquire():
            return None
        try:
            lease.keep()
            outbox = CassandraOutbox(self._db, self._keyspace, producer, id_block=1, settle_after=self._settle_after)
        except BaseException:
            lease.close()
            raise
        return TakenOutbox(lease, outbox)
