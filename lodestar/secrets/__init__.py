"""The secret-store port: secrets that must never be metadata (webhooks' signing keys, the
values of DataHub's secrets: lodestar/api/graphql/secret_values.py).

A secret belongs to an owner (a webhook's or a dataHubSecret's URN) and is named by its
fingerprint (`fingerprint`: the first 16 hex digits of its SHA-256), which metadata may hold
in its place: the aspect says which secret is meant, the store alone says what it is.
Nothing the store holds goes through the aspect store, the event log or the read models, so
no MCL, version history, subscription, replay or restore carries it; only the processes that
sign (the webhook dispatcher) and the routes that set or read secrets (registering and
rotating a webhook, GraphQL's secrets, ADMIN only) open it.

A secret is valid without end until `expire` gives it a deadline; past it, the store no longer
returns it (and drops it: at once on Cassandra by a TTL, at its next write on SQLite).

Adapters, chosen by the aspect store the secrets live beside (`beside.secret_store_of`):
`sqlite.py` (the file `secrets.db` in the data directory, mode 600) and `cassandra.py` (the
table `secrets` in the aspect store's keyspace). Both raise ingest.backends.errors.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod

SECRETS_FILE = "secrets.db"  # the SQLite adapter's file, in the data directory


def fingerprint(secret: str) -> str:
    """What names a secret where the secret itself may not be: the first 16 hex digits of the
    SHA-256 of its UTF-8 bytes (a receiver computes it to tell which secret it holds)."""
    return hashlib.sha256(secret.encode()).hexdigest()[:16]


class SecretStore(ABC):
    """Secrets by (owner, fingerprint)."""

    @abstractmethod
    def put(self, owner: str, secret: str) -> str:
        """Keep `secret` for `owner`, valid without end (also when it was kept before, with a
        deadline); its fingerprint."""

    @abstractmethod
    def get(self, owner: str, fingerprint: str) -> str | None:
        """The owner's secret of that fingerprint; None when there is none or its deadline passed."""

    @abstractmethod
    def expire(self, owner: str, fingerprint: str, at_ms: int) -> None:
        """Let the secret be valid until `at_ms` (epoch milliseconds) only; a deadline not in
        the future removes it now. Nothing happens when the store does not hold it."""

    @abstractmethod
    def valid(self, owner: str) -> dict[str, int | None]:
        """The fingerprints of the owner's valid secrets, each with its deadline (None: none)."""

    @abstractmethod
    def owners(self) -> set[str]:
        """Every owner with a valid secret."""

    @abstractmethod
    def remove(self, owner: str) -> None:
        """Forget every secret of the owner."""

    @abstractmethod
    def close(self) -> None:
        """Release what the store holds (a connection it made)."""
