"""The embedded event log: topics in one SQLite database (WAL) in the data directory, and the
consumer groups' committed offsets in a small database beside it (`<name>-offsets.db`).

The offsets live apart so that committing them never waits for the topics' write lock: GMS
holds that lock while it applies a batch of proposals (its aspects and their MCLs commit
together), and a consumer that waited for it after each batch (the MCL processor, the serial
stage of indexing) spent a fifth of its time there.

sqlite3's errors are raised as ingest.backends.errors by each method of the log (a consumer's
go through them); an append inside an aspect store's batch is translated by that batch.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Protocol

from ingest.backends.sqlite import PAGE_SIZE, WalCheckpointer, WalLimit, connect, translated
from ingest.eventlog import Consumer, EventLog, LogMessage, LogRecord, partition_for, unseen


class Keyed(Protocol):
    """What appending reads of a message: its key and value."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> bytes: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    topic TEXT NOT NULL, part INTEGER NOT NULL, offset INTEGER NOT NULL,
    key TEXT NOT NULL, value BLOB NOT NULL, ts INTEGER NOT NULL,
    PRIMARY KEY (topic, part, offset)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS producers (producer TEXT PRIMARY KEY, last_sequence INTEGER NOT NULL) WITHOUT ROWID;
"""
_OFFSETS_SCHEMA = """
CREATE TABLE IF NOT EXISTS group_offsets (
    grp TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL, next_offset INTEGER NOT NULL,
    PRIMARY KEY (grp, topic, part)
) WITHOUT ROWID;
"""
_COMMIT = ("INSERT INTO group_offsets VALUES (?, ?, ?, ?) ON CONFLICT (grp, topic, part)"
           " DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)")
OFFSETS_AUTOCHECKPOINT = 1000  # pages: the offsets database is small, its commits checkpoint it
_translated = translated(attrgetter("path"))
_offsets_translated = translated(attrgetter("offsets_path"))


class SqliteEventLog(EventLog):
    """Durable topics in one SQLite database; appends from several processes are safe."""

    @_translated
    def __init__(self, path: Path, partitions: int = 1):
        self.path = Path(path)
        self.offsets_path = self.path.with_name(f"{self.path.stem}-offsets{self.path.suffix}")
        self._partitions = partitions
        self._local = threading.local()
        self._appended = threading.Condition()
        self._conn().executescript(_SCHEMA)
        self._offsets().executescript(_OFFSETS_SCHEMA)
        self._move_offsets()
        self._checkpointer = WalCheckpointer(self.path)
        self._wal_limit = WalLimit(self.path)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.path, PAGE_SIZE)
        return conn

    def _offsets(self) -> sqlite3.Connection:
        conn = getattr(self._local, "offsets", None)
        if conn is None:
            conn = self._local.offsets = connect(self.offsets_path)
            conn.execute(f"PRAGMA wal_autocheckpoint={OFFSETS_AUTOCHECKPOINT}")
        return conn

    def _move_offsets(self) -> None:
        """Offsets a log kept in its topics' database (before they had one of their own) move
        to the offsets database, once: copied (merged by the larger offset, so a copy broken
        off is merely done again), then dropped, under the topics' write lock (taken only when
        there is something to move: opening a log otherwise never waits for a writer)."""
        conn = self._conn()
        if not _keeps_offsets(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _keeps_offsets(conn):  # still: another process may have moved them meanwhile
                self._offsets().executemany(_COMMIT, conn.execute("SELECT * FROM group_offsets").fetchall())
                conn.execute("DROP TABLE group_offsets")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def partitions(self, topic: str) -> int:
        return self._partitions

    @_translated
    def append(self, topic: str, messages: Sequence[LogMessage], producer: str | None = None) -> None:
        if not messages:
            return
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if producer is not None:
                messages = self._unseen(conn, producer, messages)
            self.append_in_transaction(conn, topic, messages)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._wal_limit.after_commit(conn)
        self.notify_appended()

    def append_in_transaction(self, conn: sqlite3.Connection, topic: str, messages: Sequence[Keyed]) -> None:
        """Append inside a write transaction the caller holds on a connection to this log's
        database, so the messages commit (or roll back) with the caller's other writes.
        The caller calls notify_appended() after its commit. Only each message's key and value
        are read (a LogMessage, or e.g. the aspect store's OutboxMessage)."""
        now = int(time.time() * 1000)
        next_offset: dict[int, int] = {}
        rows = []
        for message in messages:
            part = partition_for(message.key, self._partitions)
            if part not in next_offset:
                (last,) = conn.execute(
                    "SELECT max(offset) FROM messages WHERE topic = ? AND part = ?", (topic, part)
                ).fetchone()
                next_offset[part] = 0 if last is None else last + 1
            rows.append((topic, part, next_offset[part], message.key, message.value, now))
            next_offset[part] += 1
        conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", rows)

    def notify_appended(self) -> None:
        with self._appended:
            self._appended.notify_all()

    @staticmethod
    def _unseen(conn: sqlite3.Connection, producer: str, messages: Sequence[LogMessage]) -> list[LogMessage]:
        row = conn.execute("SELECT last_sequence FROM producers WHERE producer = ?", (producer,)).fetchone()
        fresh, newest = unseen(messages, row[0] if row else None)
        if newest is not None:
            conn.execute("INSERT INTO producers VALUES (?, ?) ON CONFLICT (producer) DO UPDATE"
                         " SET last_sequence = excluded.last_sequence", (producer, newest))
        return fresh

    @_translated
    def read(self, topic: str, partition: int = 0, offset: int = 0, limit: int = 1000) -> list[LogRecord]:
        rows = self._conn().execute(
            "SELECT part, offset, key, value, ts FROM messages"
            " WHERE topic = ? AND part = ? AND offset >= ? ORDER BY offset LIMIT ?",
            (topic, partition, offset, limit),
        ).fetchall()
        return [LogRecord(topic, *row) for row in rows]

    @_offsets_translated
    def committed(self, group: str, topic: str, partition: int) -> int:
        row = self._offsets().execute(
            "SELECT next_offset FROM group_offsets WHERE grp = ? AND topic = ? AND part = ?",
            (group, topic, partition),
        ).fetchone()
        return row[0] if row else 0

    @_translated
    def end_offset(self, topic: str, partition: int) -> int:
        (last,) = self._conn().execute("SELECT max(offset) FROM messages WHERE topic = ? AND part = ?",
                                       (topic, partition)).fetchone()
        return 0 if last is None else last + 1

    @_translated
    def first_offset(self, topic: str, partition: int) -> int:
        (first,) = self._conn().execute("SELECT min(offset) FROM messages WHERE topic = ? AND part = ?",
                                        (topic, partition)).fetchone()
        return 0 if first is None else first

    @_translated
    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int:
        """Append times never decrease along a partition (appends are serialised), so the first
        record at or after the time is a bound of the ordered scan."""
        row = self._conn().execute("SELECT offset FROM messages WHERE topic = ? AND part = ? AND ts >= ?"
                                   " ORDER BY offset LIMIT 1", (topic, partition, timestamp_ms)).fetchone()
        return row[0] if row else self.end_offset(topic, partition)

    @_translated
    def delete_before(self, topic: str, partition: int, offset: int) -> None:
        """The partition's last record always stays: the next append numbers itself after it."""
        self._conn().execute("DELETE FROM messages WHERE topic = ? AND part = ? AND offset < ?"
                             " AND offset < (SELECT max(offset) FROM messages WHERE topic = ? AND part = ?)",
                             (topic, partition, offset, topic, partition))

    @_offsets_translated
    def commit(self, group: str, positions: dict[tuple[str, int], int]) -> None:
        self._offsets().executemany(
            _COMMIT, [(group, topic, part, offset) for (topic, part), offset in positions.items()])

    def wait_for_append(self, timeout: float) -> None:
        """Wait until this process appends, or timeout (appends by other processes are polled)."""
        with self._appended:
            self._appended.wait(timeout)

    def consumer(self, group: str, topics: Sequence[str], start: Mapping[tuple[str, int], int] | None = None
                 ) -> Consumer:
        return SqliteConsumer(self, group, topics, start)

    def ping(self, timeout: float) -> None:
        """The log is a file of this machine: it always answers."""

    def close(self) -> None:
        self._checkpointer.close()
        for name in ("conn", "offsets"):
            conn = getattr(self._local, name, None)
            if conn is not None:
                conn.close()
                setattr(self._local, name, None)


def _keeps_offsets(conn: sqlite3.Connection) -> bool:
    """Whether a topics' database still has the offsets table of older versions."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'group_offsets'"
                        ).fetchone() is not None


class SqliteConsumer(Consumer):
    """The only member of its group: it is assigned every partition of its topics."""

    POLL_INTERVAL = 0.05

    def __init__(self, log: SqliteEventLog, group: str, topics: Sequence[str],
                 start: Mapping[tuple[str, int], int] | None = None):
        self.log = log
        self.group = group
        start = start or {}
        self.positions = {
            (topic, part): start[(topic, part)] if (topic, part) in start else log.committed(group, topic, part)
            for topic in topics for part in range(log.partitions(topic))
        }

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[LogRecord]:
        deadline = time.monotonic() + timeout
        while True:
            records: list[LogRecord] = []
            for (topic, part), offset in self.positions.items():
                batch = self.log.read(topic, part, offset, max_records - len(records))
                if batch:
                    self.positions[(topic, part)] = batch[-1].offset + 1
                    records.extend(batch)
                if len(records) >= max_records:
                    break
            remaining = deadline - time.monotonic()
            if records or remaining <= 0:
                return records
            self.log.wait_for_append(min(remaining, self.POLL_INTERVAL))

    def commit(self, records: Iterable[LogRecord]) -> None:
        positions: dict[tuple[str, int], int] = {}
        for record in records:
            key = (record.topic, record.partition)
            positions[key] = max(positions.get(key, 0), record.offset + 1)
        if positions:
            self.log.commit(self.group, positions)

    def close(self) -> None:
        """Nothing to release: positions not committed are simply read again next time."""
