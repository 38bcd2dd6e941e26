"""The distributed secret store: the table `secrets` in a Cassandra keyspace (the aspect
store's), one partition per owner, a row per secret:

    secrets (owner text, fingerprint text, secret text, valid_until bigint,
             PRIMARY KEY ((owner), fingerprint))

Reads and writes are QUORUM, so a secret written by one process (the API registering or
rotating a webhook) is read by any other (the dispatcher) once the write returned. A deadline
is also a TTL on the row (its whole seconds, rounded up, plus one), so Cassandra drops an
expired secret by itself; reads compare the deadline with this process's clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from cassandra.cluster import Session

from gms.store.cassandra_schema import Runner, prepare, quoted_keyspace
from ingest.backends import SCHEMA_TIMEOUT, Endpoints, cassandra_session
from ingest.backends.cassandra import contact_points, translated
from lodestar.secrets import SecretStore, fingerprint

TABLE = "secrets"


class CassandraSecretStore(SecretStore):
    def __init__(self, session: Session, keyspace: str, *, replication_factor: int = 1,
                 owns_session: bool = False, clock: Callable[[], float] = time.time):
        """The table is created if absent (and the keyspace, with SimpleStrategy, if that is
        absent too). `owns_session`: close() shuts the session's cluster down. `clock`: seconds
        since the epoch, for deadlines."""
        self._session = session
        self._owns_session = owns_session
        self._clock = clock
        self._db = Runner(session)
        ks = quoted_keyspace(keyspace)
        _ensure_table(session, keyspace, ks, replication_factor)
        table = f"{ks}.{TABLE}"
        self._put = prepare(session, f"INSERT INTO {table} (owner, fingerprint, secret, valid_until)"
                                     " VALUES (?, ?, ?, null)")
        self._put_until = prepare(session, f"INSERT INTO {table} (owner, fingerprint, secret, valid_until)"
                                           " VALUES (?, ?, ?, ?) USING TTL ?")
        self._get = prepare(session, f"SELECT secret, valid_until FROM {table} WHERE owner = ? AND fingerprint = ?")
        self._of_owner = prepare(session, f"SELECT fingerprint, valid_until FROM {table} WHERE owner = ?")
        self._all = prepare(session, f"SELECT owner, valid_until FROM {table}")
        self._delete = prepare(session, f"DELETE FROM {table} WHERE owner = ? AND fingerprint = ?")
        self._remove = prepare(session, f"DELETE FROM {table} WHERE owner = ?")

    @classmethod
    def connect(cls, endpoints: Endpoints, keyspace: str, **options: Any) -> CassandraSecretStore:
        """A store on a cluster connection of its own (closed by close()). Raises
        BackendUnavailable, naming the contact points, when none answers."""
        session = cassandra_session(endpoints)
        try:
            return cls(session, keyspace, owns_session=True, **options)
        except BaseException:
            session.cluster.shutdown()
            raise

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _alive(self, valid_until: int | None) -> bool:
        return valid_until is None or valid_until > self._now_ms()

    def put(self, owner: str, secret: str) -> str:
        name = fingerprint(secret)
        self._db.execute(self._put, (owner, name, secret))
        return name

    def get(self, owner: str, fingerprint: str) -> str | None:
        row = self._db.execute(self._get, (owner, fingerprint)).one()
        return row.secret if row is not None and self._alive(row.valid_until) else None

    def expire(self, owner: str, fingerprint: str, at_ms: int) -> None:
        row = self._db.execute(self._get, (owner, fingerprint)).one()
        if row is None:
            return
        left_ms = at_ms - self._now_ms()
        if left_ms <= 0:
            self._db.execute(self._delete, (owner, fingerprint))
        else:  # the row written again whole, every cell with the TTL: it expires as one
            self._db.execute(self._put_until, (owner, fingerprint, row.secret, at_ms, math.ceil(left_ms / 1000) + 1))

    def valid(self, owner: str) -> dict[str, int | None]:
        return {row.fingerprint: row.valid_until for row in self._db.rows(self._db.execute(self._of_owner, (owner,)))
                if self._alive(row.valid_until)}

    def owners(self) -> set[str]:
        return {row.owner for row in self._db.rows(self._db.execute(self._all)) if self._alive(row.valid_until)}

    def remove(self, owner: str) -> None:
        self._db.execute(self._remove, (owner,))

    def close(self) -> None:
        if self._owns_session:
            self._session.cluster.shutdown()


def _ensure_table(session: Session, keyspace: str, ks: str, replication_factor: int) -> None:
    """The keyspace (unless it exists) and the table (unless it exists)."""
    metadata = session.cluster.metadata.keyspaces.get(keyspace)
    if metadata is not None and TABLE in metadata.tables:
        return
    with translated(contact_points(session)):
        if metadata is None:
            session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                            f"{{'class': 'SimpleStrategy', 'replication_factor': {int(replication_factor)}}}",
                            timeout=SCHEMA_TIMEOUT)
        session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.{TABLE} (owner text, fingerprint text, secret text,"
                        " valid_until bigint, PRIMARY KEY ((owner), fingerprint))", timeout=SCHEMA_TIMEOUT)
