"""Leases on producer ids: who may write to, and publish, a producer's outbox.

A lease is a row of `leases` (producer -> holder) written with a TTL. An open store acquires
its producer id's lease (IF NOT EXISTS) and renews it (IF holder = itself) every
`(ttl - 1) * RENEW_EVERY`; it writes and publishes only while its last successful renewal was sent
less than `(ttl - 1) * TRUSTED_FOR` ago, so it stops before the row can expire (Cassandra
counts a TTL from the whole second a write lands in, so a row may expire up to a second early;
the rest is the margin for a write already sent to land). Once the row has expired, any live store may
take the lease over (IF NOT EXISTS: exactly one taker), publish the dead producer's outbox as
that producer and release it. A holder whose renewal finds the lease gone or taken is fenced:
every write and publication under it fails with LeaseLost until it acquires the lease again
(then its store starts its outbox afresh, as a restarted process would).

The holder decides by its own monotonic clock and the TTL runs on Cassandra's, so the bound
assumes that a pause of the holder is seen on its clock (a stopped process's clock runs on) and
that a request reaches Cassandra within the margin; the outbox's fences (gms.store.cassandra)
settle whatever write is still in flight when a taker reads.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
import weakref

from gms.store.cassandra_schema import START_WAIT, Runner, applied, prepare, quoted_keyspace
from ingest.backends import MIN_LEASE_TTL
from ingest.backends.errors import BackendUnavailable

log = logging.getLogger(__name__)
LEASE_TTL = 10  # seconds, by default
RENEW_EVERY = 0.2  # of the TTL less a second
TRUSTED_FOR = 0.7  # of the TTL less a second, after a renewal was sent


class ProducerInUse(BackendUnavailable):
    """Another open store holds the producer id (its lease, or outbox ids reserved at the same time)."""


class LeaseLost(BackendUnavailable):
    """This store's lease on its producer id expired or was taken over: it may not write or publish."""


class Leases:
    """The `leases` table: acquire, renew, release (all lightweight transactions) and list."""

    def __init__(self, db: Runner, keyspace: str):
        ks = quoted_keyspace(keyspace)
        session = db.session
        self._db = db
        self._acquire = prepare(session, f"INSERT INTO {ks}.leases (producer, holder) VALUES (?, ?)"
                                         " IF NOT EXISTS USING TTL ?")
        self._renew = prepare(session, f"UPDATE {ks}.leases USING TTL ? SET holder = ? WHERE producer = ?"
                                       " IF holder = ?")
        self._release = prepare(session, f"DELETE FROM {ks}.leases WHERE producer = ? IF holder = ?")
        self._held = prepare(session, f"SELECT producer FROM {ks}.leases")

    def acquire(self, producer: str, holder: str, ttl: int) -> bool:
        """Whether holder has the lease now: acquired by this request, or by an earlier one of
        the same holder whose answer was lost (a timeout)."""
        result = self._db.execute(self._acquire, (producer, holder, ttl))
        return applied(result) or result.one().holder == holder

    def renew(self, producer: str, holder: str, ttl: int) -> bool:
        return applied(self._db.execute(self._renew, (ttl, holder, producer, holder)))

    def release(self, producer: str, holder: str) -> None:
        self._db.execute(self._release, (producer, holder))

    def held(self) -> set[str]:
        """The producer ids whose lease is live."""
        return {row.producer for row in self._db.execute(self._held)}


class Lease:
    """One holder's lease on one producer id (see the module docstring). `keep()` renews it from
    a daemon thread, which ends with close() or once the Lease is no longer referenced."""

    def __init__(self, leases: Leases, producer: str, ttl: int, holder: str | None = None):
        if ttl < MIN_LEASE_TTL:
            raise ValueError(f"a lease TTL is at least {MIN_LEASE_TTL} seconds, not {ttl!r}")
        self.producer = producer
        self.ttl = ttl
        self.holder = holder or uuid.uuid4().hex
        self._leases = leases
        self._trusted = (ttl - 1) * TRUSTED_FOR  # seconds a renewal is trusted for, from when it was sent
        self._valid_until = -math.inf
        self._lost = True
        self._generation = 0  # acquisitions so far
        self._stop = threading.Event()

    def try_acquire(self) -> bool:
        """Acquire the lease if no one holds it (one request)."""
        sent = time.monotonic()
        if not self._leases.acquire(self.producer, self.holder, self.ttl):
            return False
        self._valid_until, self._lost = sent + self._trusted, False
        self._generation += 1
        return True

    def acquire(self, wait: float) -> None:
        """Acquire the lease, waiting up to `wait` seconds for its holder to release it or to
        die (its lease expiring), else ProducerInUse; and through Cassandra's unavailability (a
        replica down or slow, contention on the lease's row: the attempt's outcome unknown, it is
        asked again) for up to START_WAIT seconds, else the last BackendUnavailable."""
        started = time.monotonic()
        while True:
            try:
                if self.try_acquire():
                    return
                failure: BackendUnavailable = ProducerInUse(
                    f"producer id {self.producer!r} is held by another open store (its lease was not released nor"
                    f" expired within {wait:g}s)")
                deadline = started + wait
            except BackendUnavailable as err:
                failure, deadline = err, started + max(wait, START_WAIT)
            if time.monotonic() > deadline:
                raise failure
            time.sleep(min(1.0, self.ttl * RENEW_EVERY / 2))  # no notification when a lease expires

    def check(self) -> int:
        """The lease's generation (acquisitions so far) if it is held and trusted now, else LeaseLost."""
        if self._lost or time.monotonic() >= self._valid_until:
            raise LeaseLost(f"producer id {self.producer!r}: its lease was not renewed in time or is held by"
                            " another process; writing and publishing under it wait until it is acquired again")
        return self._generation

    def renew(self) -> None:
        """Renew the lease, or acquire it again if it was lost and is free (failures are logged:
        the lease then runs out by itself)."""
        sent = time.monotonic()
        try:
            if self._lost:
                self.try_acquire()
            elif self._leases.renew(self.producer, self.holder, self.ttl):
                self._valid_until = sent + self._trusted
            else:
                self._lost = True
                log.warning("producer id %s: its lease expired and was taken over; writes are refused", self.producer)
        except Exception as err:
            log.warning("producer id %s: renewing its lease failed: %s", self.producer, err)

    def keep(self) -> None:
        """Renew the lease every `(ttl - 1) * RENEW_EVERY` from a daemon thread."""
        ref, stop, every = weakref.ref(self), self._stop, (self.ttl - 1) * RENEW_EVERY
        threading.Thread(target=_renewing, args=(ref, stop, every), name=f"lease-{self.producer}", daemon=True).start()

    def stop_renewing(self) -> None:
        """Renew no more (the lease then runs out within its TTL, as a stopped process's would)."""
        self._stop.set()

    def close(self) -> None:
        """Stop renewing and release the lease, if this holder still has it (if that fails, the
        lease runs out within its TTL)."""
        self.stop_renewing()
        if not self._lost:
            self._lost = True
            try:
                self._leases.release(self.producer, self.holder)
            except Exception as err:
                log.warning("producer id %s: releasing its lease failed: %s", self.producer, err)


def _renewing(ref: weakref.ref[Lease], stop: threading.Event, every: float) -> None:
    while not stop.wait(every):
        lease = ref()
        if lease is None:
            return
        lease.renew()
        del lease
