"""The aspect-store port: versioned aspects with an MCL outbox committed alongside.

Every version of every aspect is a row keyed by (urn, aspect, version). Inserting a
version that already exists fails, which is the compare-and-set that conditional writes
rest on: of N writers that read version 3, exactly one can write version 4 (SQLite:
a unique key on (urn, aspect, version) inside one write transaction; Cassandra: a lightweight transaction).
A deleted aspect is a version whose value is None (a tombstone), so history survives.

Atomicity: a version and its events always commit together. Whether a whole batch does
depends on the store: SQLite commits or rolls back a batch as one transaction; Cassandra
has no multi-partition transactions, so each insert is applied (with its events) when it
is made and a failing batch cannot undo the inserts it already made; the inserts of one
entity held by `AspectBatch.together` are applied together, all or none, in one write.

Errors: an adapter raises its database's errors as `ingest.backends.errors` (BackendUnavailable
while the database does not answer or stays locked, BackendFailure for what it refuses).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import orjson


@dataclass(frozen=True, slots=True)
class StoredAspect:
    """One version of one aspect. `value_json` is canonical JSON, or None for a deletion."""

    urn: str
    aspect: str
    version: int
    value_json: str | None
    system_metadata: dict[str, Any]

    @property
    def exists(self) -> bool:
        return self.value_json is not None

    @property
    def value(self) -> Any:
        return None if self.value_json is None else orjson.loads(self.value_json)

    @property
    def modified_ms(self) -> int:
        stamp = self.system_metadata.get("aspectModified") or self.system_metadata.get("aspectCreated") or {}
        return int(stamp.get("time", 0))


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """An event committed with an aspect write, published to the event log afterwards."""

    topic: str
    key: str
    value: bytes


class Outbox(Protocol):
    """One producer's committed events awaiting publication, as the relay sees them."""

    @property
    def producer_id(self) -> str: ...

    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]: ...

    def ack_outbox(self, ids: Sequence[int]) -> None: ...


class Together:
    """The writes of one entity held by `AspectBatch.together`: `applied` tells, once the block
    has exited, whether they were written (all of them) or not (none); `full` asks the caller
    to end the block, as the store would rather write what it holds now."""

    applied: bool = True

    @property
    def full(self) -> bool:
        return False


class AspectBatch(ABC):
    """Reads and writes of one unit of work. Reads see the batch's own writes; each insert is
    atomic with its events (see the module docstring for the batch as a whole)."""

    @contextmanager
    def together(self, urn: str) -> Iterator[Together]:
        """Inserts of `urn` made in the block, and events appended with its key, written as one
        atomic write when the block exits normally, by a store whose every write is a round
        trip (default: each written as it is made, so `applied` stays True). Inside, an insert
        returns True unless the batch knows its version is taken, and reads see it; after the
        block, `applied` is False when another writer took one of the versions meanwhile:
        then none was written, and the batch reads the entity afresh. An exception in the
        block drops what it held."""
        yield Together()

    @abstractmethod
    def latest(self, urn: str, aspect: str) -> StoredAspect | None:
        """The newest version (possibly a deletion), seeing this batch's own writes."""

    @abstractmethod
    def live_aspects(self, urn: str) -> list[StoredAspect]:
        """The newest version of each aspect of the entity that is not deleted."""

    def prefetch(self, urn: str, versions: int) -> None:  # noqa: B027 (a hint: doing nothing is a valid answer)
        """A hint that this batch will apply proposals to the entity, adding up to about
        `versions` versions: a store whose operations are round trips may read the newest version
        of all its aspects at once (and those of other prefetched entities with it), answer
        `latest` and `live_aspects` from that and its own writes, and prepare for that many
        inserts (default: nothing)."""

    @abstractmethod
    def insert(self, row: StoredAspect, outbox: Sequence[OutboxMessage]) -> bool:
        """Add a version and its events atomically; False if that version already exists."""

    @abstractmethod
    def refresh(self, urn: str, aspect: str, version: int, system_metadata: dict[str, Any]) -> None:
        """Replace the system metadata of a version (an unchanged write refreshes lastObserved)."""

    @abstractmethod
    def append_outbox(self, outbox: Sequence[OutboxMessage]) -> None:
        """Events without a stored version (timeseries aspects)."""

    @abstractmethod
    def purge(self, urn: str) -> None:
        """Remove every version of every aspect of an entity (hard delete)."""


class AspectStore(ABC):
    """Versioned aspects and the MCL outbox."""

    #: How many entities the write path may work on at once, each from a thread of its own, in
    #: one batch (an entity's proposals stay in order on one thread). 1: one thread, in order,
    #: as a store whose batch is one transaction needs; a store whose every operation is a round
    #: trip to a server, with no transaction across entities (Cassandra), gains from more.
    entity_concurrency: int = 1
    #: Seconds after which a dead producer's outbox may be taken over by another process
    #: (`orphaned_producers`, `take_over`); None when it never is.
    lease_ttl: int | None = None

    @abstractmethod
    def batch(self) -> AbstractContextManager[AspectBatch]:
        """A unit of work; committed when the block exits normally, else rolled back as far as
        the store can (a transactional store rolls back everything, Cassandra nothing)."""

    @abstractmethod
    def get(self, urn: str, aspect: str, version: int | None = None) -> StoredAspect | None:
        """One version, or the newest (which may be a deletion) when version is None."""

    def live_keys(self, key_aspects: Mapping[str, str]) -> set[str]:
        """The URNs among `key_aspects` (URN -> its entity's key aspect) whose key aspect's newest
        version is not a deletion: the entities that exist. Default: a `get` each."""
        return {urn for urn, aspect in key_aspects.items() if (key := self.get(urn, aspect)) is not None and key.exists}

    @abstractmethod
    def history(self, urn: str, aspect: str) -> list[StoredAspect]:
        """Every version of an aspect, oldest first."""

    @abstractmethod
    def entity(self, urn: str) -> list[StoredAspect]:
        """The newest live version of each aspect of an entity."""

    @property
    @abstractmethod
    def producer_id(self) -> str:
        """A stable id of this store as a producer of events; outbox ids are its sequence numbers.
        One open store at a time per producer id."""

    @abstractmethod
    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]:
        """Committed events not yet acknowledged as published, oldest first, with their
        outbox ids (increasing, possibly with gaps)."""

    @abstractmethod
    def ack_outbox(self, ids: Sequence[int]) -> None:
        """Forget published events: every pending event up to the largest id given."""

    def orphaned_producers(self) -> list[str]:
        """Other producer ids whose holder is gone (its lease expired) with events still pending.
        Default: none (a store whose outbox commits with the log, or that has no leases)."""
        return []

    def take_over(self, producer: str) -> AbstractContextManager[Outbox] | None:
        """The outbox of an orphaned producer, held by this store alone until the context exits
        (then released); None if another process holds it."""
        return None

    @abstractmethod
    def scan_latest(self, after: tuple[str, str] | None = None, limit: int = 1000) -> Iterator[StoredAspect]:
        """Newest live versions in the store's scan order, resumable after the last (urn, aspect)
        returned, for restores. The aspects of one entity come together; fewer than limit only
        at the end. (SQLite scans in (urn, aspect) order, Cassandra in token order.)"""

    @abstractmethod
    def close(self) -> None: ...
