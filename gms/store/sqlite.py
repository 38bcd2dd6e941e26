"""The embedded aspect store: SQLite (WAL), by default in `<data dir>/lodestar.db`."""

from __future__ import annotations

import fcntl
import sqlite3
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import groupby
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import orjson

from gms.store import AspectBatch, AspectStore, OutboxMessage, StoredAspect
from ingest.backends.sqlite import PAGE_SIZE, WalCheckpointer, WalLimit, backend_error, connect, translated
from ingest.eventlog.sqlite import SqliteEventLog

# A new database keeps versions in the order they were written, found by a unique index on
# (urn, aspect, version): a write appends its row at the table's end and adds a short entry to
# the index, where a table keyed by (urn, aspect, version) itself inserts the whole row (a few KB
# of JSON) at a random place, splitting pages (that cost about twice as much CPU per version,
# and grew with the table). A database made before keeps that layout; every query reads both.
_ASPECTS = (
    "CREATE TABLE aspects (urn TEXT NOT NULL, aspect TEXT NOT NULL, version INTEGER NOT NULL,"
    " value TEXT, system_metadata TEXT NOT NULL)",
    "CREATE UNIQUE INDEX aspects_version ON aspects (urn, aspect, version)",
)
_OTHER_TABLES = (
    "CREATE TABLE IF NOT EXISTS outbox (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " topic TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
_COLUMNS = "urn, aspect, version, value, system_metadata"
_READ_TOGETHER = 500  # prefetched entities read in one query (SQLite allows 32,766 parameters)
_INSERT = "INSERT INTO aspects VALUES (?, ?, ?, ?, ?)"
_REFRESH = "UPDATE aspects SET system_metadata = ? WHERE urn = ? AND aspect = ? AND version = ?"
_translated = translated(attrgetter("path"))  # sqlite3's errors raised as ingest.backends.errors


def _create_tables(conn: sqlite3.Connection) -> None:
    """The store's tables, in one transaction (processes starting together on a new file)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'aspects'").fetchone() is None:
            for statement in _ASPECTS:
                conn.execute(statement)
        for statement in _OTHER_TABLES:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _row(row: tuple[Any, ...]) -> StoredAspect:
    return StoredAspect(row[0], row[1], row[2], row[3], orjson.loads(row[4]))


class _Reads:
    """Queries shared by the store (autocommit reads) and a batch (inside its transaction)."""

    conn: sqlite3.Connection

    def _latest(self, urn: str, aspect: str) -> StoredAspect | None:
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? ORDER BY version DESC LIMIT 1",
            (urn, aspect),
        ).fetchone()
        return _row(row) if row else None

    def _newest(self, urn: str) -> list[StoredAspect]:
        """The newest version of each aspect of the entity, deletions too, by aspect name."""
        return self._newest_of([urn])

    def _newest_of(self, urns: Sequence[str]) -> list[StoredAspect]:
        """The newest version of each aspect of the entities, deletions too, by urn and aspect name."""
        # The newest version numbers from the index alone, then only those rows.
        rows = self.conn.execute(
            "SELECT a.urn, a.aspect, a.version, a.value, a.system_metadata"
            " FROM (SELECT urn, aspect, max(version) AS newest FROM aspects"
            f" WHERE urn IN ({', '.join('?' * len(urns))}) GROUP BY urn, aspect) AS n"
            " JOIN aspects AS a ON a.urn = n.urn AND a.aspect = n.aspect AND a.version = n.newest"
            " ORDER BY a.urn, a.aspect",
            tuple(urns),
        ).fetchall()
        return [_row(row) for row in rows]

    def _live(self, urn: str) -> list[StoredAspect]:
        return [row for row in self._newest(urn) if row.exists]


class SqliteBatch(AspectBatch, _Reads):
    """The reads and writes of one write transaction (which holds the database's write lock).

    The batch remembers the newest version of each (urn, aspect) it has read or written (of
    every aspect of an entity it prefetched), and answers `latest` from that without a query.
    Prefetched entities are read together, in one query per `_READ_TOGETHER`, when the first
    of them is needed.
    Inserting the version after a remembered newest one cannot conflict, so such inserts (and
    refreshes) wait and go to SQLite together (`executemany`) before a query reads that
    entity's rows and when the batch commits; any other insert is made at once, and SQLite's
    unique key answers whether the version already existed."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.events: list[OutboxMessage] = []  # written when the batch commits
        self._known: dict[str, dict[str, StoredAspect | None]] = {}  # urn -> aspect -> newest (None: none)
        self._complete: set[str] = set()  # entities whose every aspect is in _known
        self._pending: list[tuple[str, tuple[Any, ...]]] = []  # (statement, parameters), in order
        self._pending_urns: set[str] = set()
        self._wanted: dict[str, None] = {}  # prefetched entities not read yet, in order

    def latest(self, urn: str, aspect: str) -> StoredAspect | None:
        if urn in self._wanted:
            self._read_wanted()
        known = self._known.get(urn)
        if known is not None and aspect in known:
            return known[aspect]
        if urn in self._complete:
            return None
        newest = self._latest(urn, aspect)  # no write of (urn, aspect) waits: it would be known
        self._known.setdefault(urn, {})[aspect] = newest
        return newest

    def live_aspects(self, urn: str) -> list[StoredAspect]:
        self.prefetch(urn, 0)
        self._read_wanted()
        return [row for _, row in sorted(self._known[urn].items()) if row is not None and row.exists]

    def prefetch(self, urn: str, versions: int) -> None:
        # One version: reading its one aspect when needed is cheaper than all of them now.
        if versions != 1 and urn not in self._complete:
            self._wanted[urn] = None

    def _read_wanted(self) -> None:
        """Read the newest version of every aspect of each prefetched entity, together."""
        if self._pending_urns.intersection(self._wanted):
            self.flush()
        urns = list(self._wanted)
        self._wanted.clear()
        for start in range(0, len(urns), _READ_TOGETHER):
            chunk = urns[start:start + _READ_TOGETHER]
            for urn in chunk:
                self._known[urn] = {}
                self._complete.add(urn)
            for row in self._newest_of(chunk):
                self._known[row.urn][row.aspect] = row

    def insert(self, row: StoredAspect, outbox: Sequence[OutboxMessage]) -> bool:
        system_metadata = orjson.dumps(row.system_metadata)
        known = self._known.get(row.urn)
        if known is not None and (row.aspect in known or row.urn in self._complete):
            newest = known.get(row.aspect)
            if row.version == (newest.version if newest else 0) + 1:
                self._defer(row.urn, _INSERT, (row.urn, row.aspect, row.version, row.value_json, system_metadata))
                known[row.aspect] = row
                self.append_outbox(outbox)
                return True
        self.flush(row.urn)
        self._forget(row.urn)  # whether the row is now the newest is SQLite's to say
        try:
            self.conn.execute(_INSERT, (row.urn, row.aspect, row.version, row.value_json, system_metadata))
        except sqlite3.IntegrityError:
            return False
        self.append_outbox(outbox)
        return True

    def refresh(self, urn: str, aspect: str, version: int, system_metadata: dict[str, Any]) -> None:
        self._defer(urn, _REFRESH, (orjson.dumps(system_metadata), urn, aspect, version))
        newest = self._known.get(urn, {}).get(aspect)
        if newest is not None and newest.version == version:
            self._known[urn][aspect] = replace(newest, system_metadata=system_metadata)

    def append_outbox(self, outbox: Sequence[OutboxMessage]) -> None:
        self.events.extend(outbox)

    def purge(self, urn: str) -> None:
        self._wanted.pop(urn, None)
        self.flush(urn)
        self.conn.execute("DELETE FROM aspects WHERE urn = ?", (urn,))
        self._known[urn] = {}
        self._complete.add(urn)

    def flush(self, urn: str | None = None) -> None:
        """Make the writes that wait (all of them: when urn is given, only if some are of it)."""
        if not self._pending or (urn is not None and urn not in self._pending_urns):
            return
        for statement, group in groupby(self._pending, key=itemgetter(0)):
            self.conn.executemany(statement, [parameters for _, parameters in group])
        self._pending.clear()
        self._pending_urns.clear()

    def _defer(self, urn: str, statement: str, parameters: tuple[Any, ...]) -> None:
        self._pending.append((statement, parameters))
        self._pending_urns.add(urn)

    def _forget(self, urn: str) -> None:
        self._wanted.pop(urn, None)
        self._known.pop(urn, None)
        self._complete.discard(urn)


class SqliteAspectStore(AspectStore, _Reads):
    """One writer connection (serialised by a lock and BEGIN IMMEDIATE, so other processes
    on the same file are excluded too) and one reader connection per thread.

    Given an embedded event log in the same database file, a batch appends its MCLs to
    that log in its own transaction: the outbox stays empty and nothing needs relaying.
    Otherwise MCLs wait in the outbox table for the relay.

    sqlite3's errors are raised as ingest.backends.errors: by each method, and for a batch's
    operations by `batch()` as it ends (nothing is added per operation)."""

    @_translated
    def __init__(self, path: Path, colocated_log: SqliteEventLog | None = None):
        self.path = Path(path)
        if colocated_log is not None and colocated_log.path.resolve() != self.path.resolve():
            raise ValueError("a co-located event log must use the aspect store's database file")
        self._log = colocated_log
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._lockfile = open(f"{self.path}.lock", "a")  # noqa: SIM115 - held for the store's lifetime
        self._writer = connect(self.path, PAGE_SIZE)
        _create_tables(self._writer)
        self._checkpointer = None if colocated_log is not None else WalCheckpointer(self.path)
        self._wal_limit = WalLimit(self.path)
        self._writer.execute("INSERT OR IGNORE INTO store_meta VALUES ('producer_id', ?)", (uuid.uuid4().hex,))
        (self._producer_id,) = self._writer.execute(
            "SELECT value FROM store_meta WHERE name = 'producer_id'").fetchone()

    @property
    def producer_id(self) -> str:
        return self._producer_id

    @property
    def conn(self) -> sqlite3.Connection:  # the reader of the calling thread
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path)
        return conn

    @contextmanager
    def batch(self) -> Iterator[AspectBatch]:
        try:
            with self._write_lock, self._process_lock():
                self._writer.execute("BEGIN IMMEDIATE")
                batch = SqliteBatch(self._writer)
                try:
                    yield batch
                    batch.flush()
                    self._write_events(batch.events)
                except BaseException:
                    self._writer.execute("ROLLBACK")
                    raise
                self._writer.execute("COMMIT")
                self._wal_limit.after_commit(self._writer)
        except sqlite3.Error as err:
            raise backend_error(err, self.path) from err
        if self._log is not None and batch.events:
            self._log.notify_appended()

    @contextmanager
    def _process_lock(self) -> Iterator[None]:
        """Writers in other processes wait here rather than in SQLite's sleeping busy handler,
        so the write lock passes from one GMS process to the next without delay."""
        fcntl.flock(self._lockfile, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lockfile, fcntl.LOCK_UN)

    def _write_events(self, events: list[OutboxMessage]) -> None:
        if self._log is None:
            self._writer.executemany("INSERT INTO outbox (topic, key, value) VALUES (?, ?, ?)",
                                     [(m.topic, m.key, m.value) for m in events])
            return
        for topic, group in groupby(events, key=attrgetter("topic")):
            self._log.append_in_transaction(self._writer, topic, list(group))

    @_translated
    def get(self, urn: str, aspect: str, version: int | None = None) -> StoredAspect | None:
        if version is None:
            return self._latest(urn, aspect)
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? AND version = ?", (urn, aspect, version)
        ).fetchone()
        return _row(row) if row else None

    @_translated
    def live_keys(self, key_aspects: Mapping[str, str]) -> set[str]:
        """See AspectStore.live_keys: one query per key aspect and `_READ_TOGETHER` URNs."""
        by_aspect: dict[str, list[str]] = defaultdict(list)
        for urn, aspect in key_aspects.items():
            by_aspect[aspect].append(urn)
        live: set[str] = set()
        for aspect, urns in by_aspect.items():
            for start in range(0, len(urns), _READ_TOGETHER):
                chunk = urns[start:start + _READ_TOGETHER]
                live.update(urn for urn, _, exists in self.conn.execute(  # the newest version's value, by max()
                    "SELECT urn, max(version), value IS NOT NULL FROM aspects"
                    f" WHERE urn IN ({', '.join('?' * len(chunk))}) AND aspect = ? GROUP BY urn",
                    (*chunk, aspect)) if exists)
        return live

    @_translated
    def history(self, urn: str, aspect: str) -> list[StoredAspect]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM aspects WHERE urn = ? AND aspect = ? ORDER BY version", (urn, aspect)
        ).fetchall()
        return [_row(row) for row in rows]

    @_translated
    def entity(self, urn: str) -> list[StoredAspect]:
        return self._live(urn)

    @_translated
    def pending_outbox(self, limit: int = 1000) -> list[tuple[int, OutboxMessage]]:
        rows = self.conn.execute(
            "SELECT id, topic, key, value FROM outbox ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [(row[0], OutboxMessage(*row[1:])) for row in rows]

    @_translated
    def ack_outbox(self, ids: Sequence[int]) -> None:
        if ids:
            with self._write_lock:
                self._writer.execute("DELETE FROM outbox WHERE id <= ?", (max(ids),))

    @_translated
    def scan_latest(self, after: tuple[str, str] | None = None, limit: int = 1000) -> Iterator[StoredAspect]:
        urn, aspect = after or ("", "")
        rows = self.conn.execute(
            "SELECT urn, aspect, max(version), value, system_metadata FROM aspects"
            " WHERE (urn, aspect) > (?, ?) GROUP BY urn, aspect HAVING value IS NOT NULL"
            " ORDER BY urn, aspect LIMIT ?",
            (urn, aspect, limit),
        ).fetchall()
        return (_row(row) for row in rows)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._writer.close()
        self._lockfile.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
