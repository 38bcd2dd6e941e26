"""Tables and statement helpers of the Cassandra aspect store (see gms.store.cassandra). Every
statement of the store goes through them, which raise the driver's errors as
ingest.backends.errors (see ingest.backends.cassandra)."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ResultSet, Session
from cassandra.concurrent import execute_concurrent
from cassandra.query import BatchStatement, BatchType, PreparedStatement, Statement, named_tuple_factory

from ingest.backends import SCHEMA_TIMEOUT
from ingest.backends.cassandra import (
    DRIVER_ERRORS,
    backend_error,
    conditional,
    contact_points,
    is_conditional,
    translated,
)
from ingest.backends.errors import BackendUnavailable

QUORUM = ConsistencyLevel.QUORUM
SERIAL = ConsistencyLevel.SERIAL
ASPECT, OUTBOX = "aspect", "outbox"  # the kinds of rows in an entity's partition

_TABLES = {
    # One partition per entity. Rows of kind 'aspect': name = aspect, seq = version (newest first),
    # value/system_metadata. Rows of kind 'outbox': name = producer id, seq = outbox id,
    # topic/msg_key/payload: pending events, written in the same conditional batch as their version.
    "aspects": """
        CREATE TABLE IF NOT EXISTS {ks}.aspects (
            urn text, kind text, name text, seq bigint,
            value text, system_metadata text,
            topic text, msg_key text, payload blob,
            PRIMARY KEY ((urn), kind, name, seq)
        ) WITH CLUSTERING ORDER BY (kind ASC, name ASC, seq DESC)""",
    # Pointers to the pending events of each producer, in outbox id order.
    "outbox_pending": """
        CREATE TABLE IF NOT EXISTS {ks}.outbox_pending (
            producer text, id bigint, urn text,
            PRIMARY KEY ((producer), id)
        )""",
    # Each producer's next unreserved outbox id; blocks of ids are reserved by LWT.
    "producers": "CREATE TABLE IF NOT EXISTS {ks}.producers (producer text PRIMARY KEY, next_id bigint)",
    # Who holds each producer id, written with a TTL and renewed by LWT (gms.store.cassandra_lease).
    "leases": "CREATE TABLE IF NOT EXISTS {ks}.leases (producer text PRIMARY KEY, holder text)",
}
_KEYSPACE = re.compile(r"[a-z0-9_]{1,48}")
Result = TypeVar("Result")


def quoted_keyspace(keyspace: str) -> str:
    """The keyspace as a quoted CQL identifier (lowercase, as unquoted names are read)."""
    if not _KEYSPACE.fullmatch(keyspace):
        raise ValueError(f"keyspace {keyspace!r}: expected 1 to 48 lowercase letters, digits or underscores")
    return f'"{keyspace}"'


def ensure_schema(session: Session, keyspace: str, replication_factor: int) -> None:
    """Create the keyspace (SimpleStrategy) and the tables unless they exist. A keyspace
    created beforehand (e.g. with NetworkTopologyStrategy) is used as it is."""
    metadata = session.cluster.metadata.keyspaces.get(keyspace)
    if metadata is not None and set(_TABLES) <= set(metadata.tables):
        return
    ks = quoted_keyspace(keyspace)
    with translated(contact_points(session)):
        session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                        f"{{'class': 'SimpleStrategy', 'replication_factor': {int(replication_factor)}}}",
                        timeout=SCHEMA_TIMEOUT)
        for ddl in _TABLES.values():
            session.execute(ddl.format(ks=ks), timeout=SCHEMA_TIMEOUT)


_CONDITION = re.compile(r"\sIF\s")


def prepare(session: Session, cql: str, consistency: int = QUORUM) -> PreparedStatement:
    """A prepared statement with the store's consistency levels, whatever the session's defaults;
    one with a condition (IF) is marked `conditional`, so the driver never sends it twice."""
    with translated(contact_points(session)):
        statement = session.prepare(cql)
    statement.consistency_level = consistency
    statement.serial_consistency_level = SERIAL
    return conditional(statement) if _CONDITION.search(cql) else statement


def unlogged_batch(statements: list[tuple[PreparedStatement, tuple[Any, ...]]]) -> BatchStatement:
    """Statements as one request. On one partition the batch is atomic, and conditional if any
    has IF; across partitions it is not atomic (each partition's part applies on its own)."""
    batch = BatchStatement(BatchType.UNLOGGED, consistency_level=QUORUM, serial_consistency_level=SERIAL)
    for statement, params in statements:
        batch.add(statement, params)
    return conditional(batch) if any(is_conditional(statement) for statement, _ in statements) else batch


class Runner:
    """Runs the store's statements on a session, with the session's default execution profile
    but rows from `named_tuple_rows`; the driver's errors are raised as backend errors (also
    those of the later pages of a result iterated through `rows`)."""

    def __init__(self, session: Session):
        self.session = session
        self.profile = session.execution_profile_clone_update(EXEC_PROFILE_DEFAULT, row_factory=named_tuple_rows)
        self.where = contact_points(session)

    def execute(self, statement: Statement | str, params: Sequence[Any] | None = None) -> ResultSet:
        try:
            return self.session.execute(statement, params, execution_profile=self.profile)
        except DRIVER_ERRORS as err:
            raise backend_error(err, self.where) from err

    def concurrently(self, statements: Sequence[tuple[Statement, Sequence[Any] | None]], concurrency: int = 64
                     ) -> list[ResultSet]:
        """The results of statements run concurrently, in order; raises the first error. (One
        statement is simply executed.)"""
        if len(statements) <= 1:
            return [self.execute(statement, params) for statement, params in statements]
        try:
            return [result for _, result in execute_concurrent(self.session, statements, concurrency=concurrency,
                                                               execution_profile=self.profile)]
        except DRIVER_ERRORS as err:
            raise backend_error(err, self.where) from err

    def rows(self, rows: Iterable[Any]) -> Iterator[Any]:
        """`rows` (of results paged by the driver) with the driver's errors raised as backend errors."""
        try:
            yield from rows
        except DRIVER_ERRORS as err:
            raise backend_error(err, self.where) from err


def named_tuple_rows(colnames: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows as the driver's default row factory makes them (named tuples of the cleaned column
    names), with each row class made once per column list rather than once per result:
    namedtuple() takes ~100 µs, which was a fifth of GMS's CPU on Cassandra."""
    row = _row_class(tuple(colnames))
    return [row(*values) for values in rows]


@functools.lru_cache(maxsize=256)
def _row_class(colnames: tuple[str, ...]) -> type[tuple[Any, ...]]:
    return type(named_tuple_factory(colnames, [[None] * len(colnames)])[0])


# Seconds a starting store asks its set-up statements (a producer's registration, its lease) again
# through Cassandra's unavailability: on a busy ring, where a replica restarts or another process
# contends for the same row, one lightweight transaction can time out after tens of seconds.
START_WAIT = 120.0


def while_unavailable(call: Callable[[], Result], wait: float, pause: float = 0.5) -> Result:
    """call(), asked again while it raises BackendUnavailable (a replica down or slow, a
    lightweight transaction timing out under contention), for up to `wait` seconds; then its last
    error. Only for idempotent calls: an attempt that timed out may have been applied."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return call()
        except BackendUnavailable:
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)


def applied(result: ResultSet) -> bool:
    """Whether a conditional statement or batch was applied: its first column, [applied]
    (ResultSet.was_applied works with the driver's own row factories only)."""
    return bool(result.one()[0])
