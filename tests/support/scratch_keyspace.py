"""A Cassandra keyspace of its own for a group of tests, with stores on one shared session."""

from __future__ import annotations

from typing import Any

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args

from gms.store.cassandra import CassandraAspectStore
from ingest.backends import Endpoints
from tests.support.backends import unique_name


class ScratchKeyspace:
    """Created (with the store's tables) on construction, dropped by drop()."""

    def __init__(self, endpoints: Endpoints):
        self.name = unique_name("lodestar_test")
        self.endpoints = endpoints
        # A loaded test machine's Cassandra may take longer than the product's 5 s to list its schema.
        self._owner = CassandraAspectStore.connect(endpoints, self.name, connect_timeout=30)

    @property
    def session(self) -> Session:
        """The session the keyspace was made with."""
        return self._owner.session

    def store(self, producer_id: str | None = None, **options: Any) -> CassandraAspectStore:
        """A store in this keyspace, by default with a producer id of its own."""
        return CassandraAspectStore(self._owner.session, self.name, producer_id or unique_name("producer"), **options)

    def clear(self) -> None:
        """Delete every entity, so the next test starts from an empty store."""
        session = self._owner.session
        urns = [(row.urn,) for row in session.execute(f'SELECT DISTINCT urn FROM "{self.name}".aspects')]
        delete = session.prepare(f'DELETE FROM "{self.name}".aspects WHERE urn = ?')
        execute_concurrent_with_args(session, delete, urns, concurrency=64)

    def drop(self) -> None:
        self._owner.session.execute(f'DROP KEYSPACE IF EXISTS "{self.name}"')
        self._owner.close()
