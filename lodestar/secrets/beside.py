"""The secret store beside an aspect store: the adapter on the same backend, in the same place."""

from __future__ import annotations

import threading
import weakref

from gms.store import AspectStore
from lodestar.secrets import SECRETS_FILE, SecretStore

_beside: weakref.WeakKeyDictionary[AspectStore, SecretStore] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def secret_store_of(store: AspectStore) -> SecretStore:
    """The secret store beside an aspect store, on the same backend (one per aspect store, made
    on first use): beside a SQLite store, `secrets.db` in its directory; beside a Cassandra
    store, the table `secrets` in its keyspace, on its session."""
    with _lock:
        found = _beside.get(store)
        if found is None:
            found = _beside[store] = _open_beside(store)
        return found


def _open_beside(store: AspectStore) -> SecretStore:
    from gms.store.sqlite import SqliteAspectStore

    if isinstance(store, SqliteAspectStore):
        from lodestar.secrets.sqlite import SqliteSecretStore

        return SqliteSecretStore(store.path.parent / SECRETS_FILE)
    from gms.store.cassandra import CassandraAspectStore

    if isinstance(store, CassandraAspectStore):
        from lodestar.secrets.cassandra import CassandraSecretStore

        return CassandraSecretStore(store.session, store.keyspace)
    raise TypeError(f"no secret store is known beside a {type(store).__name__}")
