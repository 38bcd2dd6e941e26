"""The embedded secret store: a SQLite file of its own (`secrets.db` in the data directory),
readable and writable by its owner only (mode 600, set again whenever the store writes).

Secrets are read and written rarely (a webhook registered, rotated or removed; a dispatcher
reading a secret once), so each call opens its connection and closes it: the store holds
nothing open, and the write-ahead log is folded back into the file when the last connection
closes. Deleted secrets are overwritten in the file (`secure_delete`). The file is made by
the first write; until then every read finds nothing.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ingest.backends.sqlite import connect, translated
from lodestar.secrets import SecretStore, fingerprint

_SCHEMA = """
CREATE TABLE IF NOT EXISTS secrets (
    owner TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    secret TEXT NOT NULL,
    valid_until INTEGER,  -- epoch milliseconds; NULL: no deadline
    PRIMARY KEY (owner, fingerprint)
) WITHOUT ROWID;
"""
_VALID = "(valid_until IS NULL OR valid_until > ?)"
_translated = translated(lambda store: store.path)


class SqliteSecretStore(SecretStore):
    def __init__(self, path: Path, clock: Callable[[], float] = time.time):
        """`clock`: seconds since the epoch, for deadlines."""
        self.path = Path(path)
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    @contextmanager
    def _connection(self, write: bool) -> Iterator[sqlite3.Connection | None]:
        """A connection (None for a read before the file exists); a write runs in a transaction,
        on a file made (or kept) private first, and removes expired secrets."""
        if not write and not self.path.exists():
            yield None
            return
        if write:
            self._private_file()
        conn = connect(self.path)
        try:
            conn.execute("PRAGMA secure_delete=ON")
            if not write:
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_SCHEMA)
            yield conn
            conn.execute("DELETE FROM secrets WHERE valid_until <= ?", (self._now_ms(),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()

    def _private_file(self) -> None:
        """Make the file if absent, readable and writable by its owner only; tighten a file
        that allows more."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        if stat.S_IMODE(os.stat(self.path).st_mode) & 0o077:
            os.chmod(self.path, 0o600)

    @_translated
    def put(self, owner: str, secret: str) -> str:
        name = fingerprint(secret)
        with self._connection(write=True) as conn:
            assert conn is not None
            conn.execute("INSERT INTO secrets VALUES (?, ?, ?, NULL) ON CONFLICT (owner, fingerprint) DO UPDATE"
                         " SET secret = excluded.secret, valid_until = NULL", (owner, name, secret))
        return name

    @_translated
    def get(self, owner: str, fingerprint: str) -> str | None:
        with self._connection(write=False) as conn:
            if conn is None:
                return None
            row = _rows(conn, f"SELECT secret FROM secrets WHERE owner = ? AND fingerprint = ? AND {_VALID}",
                        (owner, fingerprint, self._now_ms()))
            return row[0][0] if row else None

    @_translated
    def expire(self, owner: str, fingerprint: str, at_ms: int) -> None:
        with self._connection(write=True) as conn:
            assert conn is not None
            conn.execute("UPDATE secrets SET valid_until = ? WHERE owner = ? AND fingerprint = ?",
                         (at_ms, owner, fingerprint))

    @_translated
    def valid(self, owner: str) -> dict[str, int | None]:
        with self._connection(write=False) as conn:
            if conn is None:
                return {}
            return dict(_rows(conn, f"SELECT fingerprint, valid_until FROM secrets WHERE owner = ? AND {_VALID}",
                              (owner, self._now_ms())))

    @_translated
    def owners(self) -> set[str]:
        with self._connection(write=False) as conn:
            if conn is None:
                return set()
            return {owner for (owner,) in _rows(conn, f"SELECT DISTINCT owner FROM secrets WHERE {_VALID}",
                                                (self._now_ms(),))}

    @_translated
    def remove(self, owner: str) -> None:
        with self._connection(write=True) as conn:
            assert conn is not None
            conn.execute("DELETE FROM secrets WHERE owner = ?", (owner,))

    def close(self) -> None:
        """Nothing to release: each call opened and closed its connection."""


def _rows(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
    """The rows of a query; none when the table was not made yet (a file made by a write that failed)."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return []
        raise
