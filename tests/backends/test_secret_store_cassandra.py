"""The secret-store contract on Cassandra, and what is particular to it: the table in the aspect
store's keyspace, and deadlines that are TTLs. One keyspace for the whole module, dropped at its end."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from ingest.backends import Endpoints
from lodestar.secrets import SecretStore
from lodestar.secrets.beside import secret_store_of
from lodestar.secrets.cassandra import CassandraSecretStore
from tests.contracts.secret_store import Clock, SecretStoreContract
from tests.support.backends import unique_name
from tests.support.scratch_keyspace import ScratchKeyspace


@pytest.fixture(scope="module")
def keyspace(cassandra_endpoints: Endpoints) -> Iterator[ScratchKeyspace]:
    scratch = ScratchKeyspace(cassandra_endpoints)
    yield scratch
    scratch.drop()


class TestCassandraSecretStore(SecretStoreContract):
    @pytest.fixture
    def open_store(self, keyspace: ScratchKeyspace) -> Callable[[Clock], SecretStore]:
        session = keyspace.store().session
        return lambda clock: CassandraSecretStore(session, keyspace.name, clock=clock)


def test_beside_a_cassandra_store_it_is_a_table_of_its_keyspace_and_a_deadline_is_a_ttl(keyspace: ScratchKeyspace):
    aspects = keyspace.store()
    store = secret_store_of(aspects)
    assert isinstance(store, CassandraSecretStore) and secret_store_of(aspects) is store
    owner = "urn:li:webhook:ttl"
    name = store.put(owner, "expiring")
    rows = f'SELECT TTL(secret) AS ttl FROM "{keyspace.name}".secrets WHERE owner = %s'
    assert [row.ttl for row in aspects.session.execute(rows, (owner,))] == [None]
    store.expire(owner, name, int(time.time() * 1000) + 30_000)
    (ttl,) = [row.ttl for row in aspects.session.execute(rows, (owner,))]
    assert 25 <= ttl <= 32


def test_a_store_of_its_own_creates_the_keyspace_it_is_given(cassandra_endpoints: Endpoints):
    name = unique_name("secrets")
    store = CassandraSecretStore.connect(cassandra_endpoints, name)
    try:
        store.put("urn:li:webhook:own", "s")
        other = CassandraSecretStore.connect(cassandra_endpoints, name)  # another process, the table there
        assert other.owners() == {"urn:li:webhook:own"}
        other.close()
    finally:
        store._session.execute(f'DROP KEYSPACE IF EXISTS "{name}"', timeout=120)
        store.close()
